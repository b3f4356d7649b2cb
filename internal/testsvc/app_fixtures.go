package testsvc

// GenerousConfig is a seckill configuration generous enough that only what a test sets
// limits anything: every rate limit far above what a test sends. Its identity mode is header
// (the tests play the gateway). The tests of app and of app/admission start from it.
const GenerousConfig = `
auth: {mode: header, trustedGateway: true}
limits:
  global:   {rate: 1000000, burst: 1000000}
  campaign: {rate: 1000000, burst: 1000000}
  activity: {rate: 1000000, burst: 1000000}
  user:     {rate: 1000, burst: 1000}
  ip:       {rate: 1000000, burst: 1000000}
  userWindow: {window: 60s, max: 1000}
  tokens:   {rate: 1000000, burst: 1000000}
  tokensPerUser: 1000
  reads:    {rate: 1000000, burst: 1000000}
`
