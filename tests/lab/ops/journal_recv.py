#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A stand-in for journald's native socket: binds SOCKET (normally
/run/systemd/journal/socket), decodes every datagram of the native journal
protocol (sd_journal_sendv(3); systemd's JOURNAL_NATIVE_PROTOCOL.md: "KEY=value\\n",
or "KEY\\n" + 64-bit little-endian length + value + "\\n" for binary-safe
values) and appends one JSON object per entry to OUT. Runs until killed."""
import json
import os
import socket
import struct
import sys


def parse(data):
    fields = {}
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            (n,) = struct.unpack_from("<Q", data, nl + 1)
            v = data[nl + 9:nl + 9 + n]
            i = nl + 9 + n + 1
        fields[k.decode()] = v.decode("utf-8", "replace")
    return fields


def main():
    path, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    os.chmod(path, 0o666)
    with open(out, "a", buffering=1) as f:
        while True:
            data = s.recv(1 << 20)
            f.write(json.dumps(parse(data)) + "\n")


if __name__ == "__main__":
    main()
