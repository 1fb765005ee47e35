#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Abuse of rcnetd's ctl socket (run inside the lab guest, as root): each case
# must end in an error reply or a clean close, and a root `status` must keep
# answering within 1 s after it. Prints "PASS ..."/"FAIL ..." lines and a
# summary; exit 1 when any case failed.
#   ctl_abuse.py SOCKET UNPRIV_UID GROUP_GID
import json, os, random, socket, sys, time

SOCK, UNPRIV, GGID = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failures = 0


def report(ok, what):
    global failures
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    failures += 0 if ok else 1


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(SOCK)
    return s


def read_reply(s, limit=10.0):
    """One reply line, b'' on a clean close, None on a timeout."""
    s.settimeout(limit)
    buf = b""
    try:
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                return buf
            buf += chunk
    except socket.timeout:
        return None
    except ConnectionResetError:
        return b""
    return buf


def error_or_close(reply):
    if reply == b"":
        return True
    try:
        # Random bytes may hold several newlines: several requests, several
        # replies. Every reply must be an error.
        lines = [l for l in reply.split(b"\n") if l.strip()]
        return bool(lines) and all(
            json.loads(l).get("ok") is False and "error" in json.loads(l) for l in lines)
    except ValueError:
        return False


def status_time():
    t = time.monotonic()
    try:
        s = connect()
        s.sendall(b'{"v":1,"cmd":"status"}\n')
        r = read_reply(s, 5.0)
        s.close()
        ok = r is not None and json.loads(r).get("ok") is True
    except (OSError, ValueError):
        ok = False
    return ok, time.monotonic() - t


def status_ok(after):
    ok, dt = status_time()
    report(ok and dt < 1.0, f"status answers after {after} ({dt * 1000:.0f} ms)")


def send_case(name, payload, expect_close=False):
    s = connect()
    try:
        s.sendall(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed on us mid-send: a clean close
    r = read_reply(s)
    s.close()
    report(r is not None and error_or_close(r), f"{name}: error reply or close ({(r or b'')[:80]!r})")
    status_ok(name)


random.seed(7)
send_case("random bytes", bytes(random.getrandbits(8) for _ in range(4096)) + b"\n")
send_case("random bytes, no newline, then close", bytes(random.getrandbits(8) for _ in range(1000)))
send_case("10 MB request", b"x" * (10 * 1024 * 1024))
send_case("deeply nested JSON", b"[" * 60000 + b"\n")
send_case("deeply nested object", b'{"v":1,"cmd":"status","args":' + b'{"a":' * 20000 + b"\n")
send_case("unknown command", b'{"v":1,"cmd":"rm -rf"}\n')
send_case("wrong version", b'{"v":99,"cmd":"status"}\n')

# Half a request, then silence: closed by the request timeout, never stalling.
s = connect()
s.sendall(b'{"v":1,"cmd":"sta')
t = time.monotonic()
status_ok("a half request is pending")
r = read_reply(s, 15.0)
report(r is not None and error_or_close(r), f"half request then silence: closed after {time.monotonic() - t:.1f} s")
s.close()

# 200 concurrent clients, each asking for status.
clients = []
for _ in range(200):
    try:
        c = connect()
        c.sendall(b'{"v":1,"cmd":"status"}\n')
        clients.append(c)
    except OSError:
        clients.append(None)
answered = refused = silent = 0
for c in clients:
    if c is None:
        refused += 1
        continue
    r = read_reply(c, 10.0)
    if r is None:
        silent += 1
    elif r == b"" or json.loads(r).get("ok") is False:
        refused += 1
    else:
        answered += 1
    c.close()
report(silent == 0 and answered > 0, f"200 concurrent clients: {answered} answered, {refused} refused or closed, {silent} left hanging")
status_ok("200 concurrent clients")


def as_user(uid, gid, groups, line):
    """Runs one request in a child with the given credentials; returns the reply."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            s = connect()
            s.sendall(line)
            r = read_reply(s, 5.0) or b""
        except OSError as e:
            r = f"oserror {e}".encode()
        os.write(wr, r)
        os._exit(0)
    os.close(wr)
    out = b""
    while True:
        chunk = os.read(rd, 65536)
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out


r = as_user(UNPRIV, UNPRIV, [], b'{"v":1,"cmd":"disconnect","args":{"peer":"10.99.0.2"}}\n')
report(b"forbidden" in r or b"oserror" in r, f"a user outside the ctl group cannot disconnect ({r[:80]!r})")
r = as_user(UNPRIV, UNPRIV, [GGID], b'{"v":1,"cmd":"disconnect","args":{"peer":"10.99.0.2"}}\n')
report(b"forbidden" in r, f"a ctl-group member (read-only) cannot disconnect ({r[:80]!r})")
r = as_user(UNPRIV, UNPRIV, [GGID], b'{"v":1,"cmd":"status"}\n')
report(b'"ok":true' in r, "a ctl-group member may read status")

# Lockout: a read-only member opens many idle connections; root must still get in.
rd, wr = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(rd)
    os.setgroups([GGID])
    os.setgid(UNPRIV)
    os.setuid(UNPRIV)
    held = []
    give_up = time.monotonic() + 10
    while len(held) < 100 and time.monotonic() < give_up:
        try:
            held.append(connect())
        except OSError:
            time.sleep(0.01)  # the listen backlog is full: the server is accepting

    time.sleep(0.3)  # let the server accept them all
    os.write(wr, str(len(held)).encode())
    os.close(wr)
    time.sleep(8)
    os._exit(0)
os.close(wr)
held = os.read(rd, 64).decode()
os.close(rd)
print(f"INFO the read-only member holds {held} connections", flush=True)
ok, dt = status_time()
report(ok and dt < 1.0, f"root status while a read-only member holds 100 idle connections ({dt * 1000:.0f} ms)")
os.waitpid(pid, 0)
status_ok("the idle connections ended")

print(f"ctl abuse: {failures} failed", flush=True)
sys.exit(1 if failures else 0)
