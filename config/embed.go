package config

import _ "embed"

//go:embed seckill.yaml
var defaultYAML string

// DefaultYAML is config/seckill.yaml as compiled into the binary: every key with its default.
// The service starts from it when run outside the repository without a configuration file.
func DefaultYAML() []byte { return []byte(defaultYAML) }
