"""runner_time.py times the image's runner (images/python/run.py, started as
the image starts it: from its byte-compiled run.pyc) with no engine in
between: how long a warm runner takes from a program's header to its ack,
and from the ack to its end marker, for print('hello'). It runs
inside a container of the image, so that the runner starts as it does there
(BENCHMARKS.md, 2026-12-03 10:02):

  docker run --rm --network none -v "$PWD/test/scripts/runner_time.py:/t.py:ro" \
      --entrypoint /usr/bin/python3 sandbox-python:3.11 /t.py [RUNS [WARM_SECONDS]]

WARM_SECONDS (0.3 by default) is how long each runner starts before its
program comes; the data image's preload takes longer (give it 3).
"""
import os
import select
import subprocess
import sys
import time

CODE = b"print('hello')"
TOKEN = b"a" * 32


def one(warm):
    """The milliseconds to the ack and from it to the end marker of one run."""
    p = subprocess.Popen(["/usr/bin/python3", "-I", "/opt/sandbox/run.pyc"], cwd="/tmp",
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    time.sleep(warm)  # the runner is warm: its interpreter waits for the header
    began = time.perf_counter()
    p.stdin.write(TOKEN + b" %d 0 0 0 10 1000\n" % len(CODE) + CODE)
    p.stdin.flush()
    out, acked = b"", None
    deadline = began + 10
    while out.count(b"\0sandboxd:") < 2:  # the ack, then the end marker
        left = deadline - time.perf_counter()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            p.kill()
            sys.exit("the runner gave no end marker within 10 s: %r" % out)
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            sys.exit("the runner ended without its end marker: %r" % out)
        out += chunk
        if acked is None and (b":go\n" in out or b":gl\n" in out):
            acked = time.perf_counter()
    ended = time.perf_counter()
    p.stdin.close()
    p.wait()
    return (acked - began) * 1000, (ended - acked) * 1000


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    warm = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    times = [one(warm) for _ in range(runs)]
    ack = sorted(t[0] for t in times)
    end = sorted(t[1] for t in times)
    print("%d runs: header to ack, median %.2f ms; ack to end marker, median %.2f ms (%.2f to %.2f)"
          % (runs, ack[runs // 2], end[runs // 2], end[0], end[-1]))


main()
