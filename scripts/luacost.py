#!/usr/bin/env python3
"""luacost.py: the Redis time of the batch reservation script alone, per reservation.

Sends lua/inventory_reserve_batch.lua (its includes expanded as lua/lua.go does) straight to
a Redis server, without the service: CALLS calls of BATCH reservations each, every one a new
user on a random one of SHARDS shards, and prints from INFO commandstats the EVALSHA time per
reservation, the part spent in the commands the script ran, and the script's own part (Lua,
arguments, answers). The dimensions the bench turns on can be turned off one by one to see
what each costs (docs/BENCHMARKS.md, "The admitted path's Redis time, round four").

It writes keys of its own (sk:{luacost-<pid>:...}), deletes them at the end, and resets the
server's command statistics: run it on a Redis of its own, for example
  redis-server --port 16399 --save '' --daemonize yes
  python3 scripts/luacost.py --port 16399
--ceiling measures the ceiling on the same server instead (min_reserve.lua, one reservation a
call), for a ratio from one run.
"""
import argparse
import os
import random
import re
import socket

LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lua')


def source(name):
    out = []
    with open(os.path.join(LUA, name)) as f:
        for line in f:
            m = re.match(r'\s*--#include (\S+)', line)
            out.append(source(m.group(1)) if m else line)
    return ''.join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port))
        self.f = self.s.makefile('rb')

    def __call__(self, *args):
        b = [b'*%d\r\n' % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            b.append(b'$%d\r\n%s\r\n' % (len(a), a))
        self.s.sendall(b''.join(b))
        return self.read()

    def read(self):
        line = self.f.readline()
        t, r = line[:1], line[1:-2]
        if t == b'+':
            return r.decode()
        if t == b'-':
            raise RuntimeError(r.decode())
        if t == b':':
            return int(r)
        if t == b'$':
            n = int(r)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode()
        if t == b'*':
            n = int(r)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError('unexpected reply %r' % line)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--port', type=int, required=True)
    p.add_argument('--calls', type=int, default=1000)
    p.add_argument('--batch', type=int, default=28, help='reservations a call (bench.sh cmdstats sees about 28)')
    p.add_argument('--shards', type=int, default=16)
    p.add_argument('--no-limits', action='store_true', help='user bucket and window off')
    p.add_argument('--no-ip', action='store_true', help='no IP bucket')
    p.add_argument('--no-key', action='store_true', help='no idempotency field')
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--ceiling', action='store_true',
                   help="the ceiling instead: internal/ginhello's min_reserve.lua, CALLS x BATCH calls of one each")
    o = p.parse_args()
    rnd = random.Random(o.seed)
    r = Conn(o.port)
    if o.ceiling:
        ceiling(r, o.calls * o.batch)
        return
    sha = r('SCRIPT', 'LOAD', source('inventory_reserve_batch.lua'))
    ns = 'luacost-%d' % os.getpid()
    keys = []
    for j in range(o.shards):
        pre = 'sk:{%s:0:%d}:' % (ns, j)
        keys += [pre + k for k in ('stock', 'users', 'seq', 'journal', 'stats', 'gen')]
        r('SET', pre + 'stock', 10 ** 12)
        r('SET', pre + 'gen', 'g1')
    ipkey = 'sk:{ip:%s}:tk' % ns
    # the single script's ARGV[1..20] (lua/inventory_reserve.lua), as bench.sh's limits set them
    rate, window = ('0', '0') if o.no_limits else ('1000', '60000')
    common = [ns, 'u', 'h', '1', '1', '0', '0', rate, '1000', window, '1000', '', '0', '0', 'g1', '0',
              '%016x-' % rnd.getrandbits(64), '0', '0' if o.no_ip else '1000000', '1000000']
    r('CONFIG', 'RESETSTAT')
    user = 0
    try:
        for c in range(o.calls):
            argv = list(common)
            argv[17] = str(c + 1)
            argv.append(o.shards)
            for j in range(o.shards):
                argv += [j, 'g1', 0]
            for _ in range(o.batch):
                user += 1
                uh = '%032x' % rnd.getrandbits(128)
                idf = '' if o.no_key else uh + ':i:' + '%032x' % rnd.getrandbits(128)
                argv += [rnd.randrange(o.shards) + 1, 'user-%d' % user, uh, '1', idf]
            ipkeys = [] if o.no_ip else [ipkey] * o.batch
            res = r('EVALSHA', sha, len(keys) + len(ipkeys), *keys, *ipkeys, *argv)
            if len(res) != o.batch or any(not isinstance(x, list) or x[0] != 1 for x in res):
                raise SystemExit('call %d: not every reservation was reserved: %r' % (c, res[:3]))
        stats = r('INFO', 'commandstats')
    finally:
        r('DEL', *keys, ipkey)
    evalsha = commands = 0
    for line in stats.splitlines():
        m = re.match(r'cmdstat_([\w|]+):calls=(\d+),usec=(\d+)', line)
        if not m or m.group(1) in ('config|resetstat', 'script|load', 'info'):
            continue
        if m.group(1) == 'evalsha':
            evalsha = int(m.group(3))
        else:
            commands += int(m.group(3))
    n = o.calls * o.batch
    print('%d reservations, %d a call, %d shards%s%s%s: EVALSHA %.2f us per reservation, commands %.2f, the script\'s own %.2f'
          % (n, o.batch, o.shards, ', no limits' if o.no_limits else '', ', no IP' if o.no_ip else '',
             ', no key' if o.no_key else '', evalsha / n, commands / n, (evalsha - commands) / n))


def ceiling(r, n):
    """The ceiling of docs/BENCHMARKS.md on the same Redis: n calls of min_reserve.lua (DECRBY,
    TIME and XADD of the service's entry form), one reservation each, and its EVALSHA time per call."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'internal', 'ginhello', 'min_reserve.lua')
    with open(path) as f:
        sha = r('SCRIPT', 'LOAD', f.read())
    stock, journal = 'sk:{luacost-ceiling-%d}:stock' % os.getpid(), 'sk:{luacost-ceiling-%d}:journal' % os.getpid()
    r('SET', stock, 10 ** 12)
    r('CONFIG', 'RESETSTAT')
    try:
        for i in range(n):
            res = r('EVALSHA', sha, 2, stock, journal, 'luacost.0.0.%d.%016x-1' % (i + 1, i), 'luacost',
                    'user-%d' % i, '%032x' % i, '1', '0', '0')
            if res[0] != 1:
                raise SystemExit('call %d: not taken: %r' % (i, res))
        stats = r('INFO', 'commandstats')
    finally:
        r('DEL', stock, journal)
    for line in stats.splitlines():
        m = re.match(r'cmdstat_evalsha:calls=(\d+),usec=(\d+)', line)
        if m:
            print('%d calls of the ceiling script: EVALSHA %.2f us per call' % (n, int(m.group(2)) / n))


if __name__ == '__main__':
    main()
