"""sandbox-run: the entry point of every sandbox container.

It is started before its program exists (a warm container waits here), with
everything it needs already imported. It speaks the service's runner
protocol (runtime/protocol.go) on its standard streams:

  stdin:   "<token> <n> <m>\\n", then the n bytes of the program, then the
           m bytes of the program's standard input
  stdout:  "\\0sandboxd:<token>:go\\n" once the program is read, before it runs
  both:    "\\0sandboxd:<token>:<sss> <cpu> <rss>\\n" once the program has
           ended and its output is flushed; <sss> is its exit status in 3
           digits, <cpu> its CPU milliseconds and <rss> its peak resident
           memory in KiB, 10 digits each

The usage in the end marker is measured here, where it costs nothing:
<cpu> is user plus system time (getrusage of this process and of its
reaped children) since just before the program started, so the runner's own
start-up is left out; <rss> is the larger of this process's peak resident
set and that of its largest reaped child (ru_maxrss), the interpreter's own
few MiB included, as `python3 main.py` would show.

The end marker lets the service answer without waiting for the container to
exit. It is written last at exit, after the program's threads and atexit
handlers, and only by this process (not a forked child). A program that ends
without it (os._exit, a signal, the OOM killer) is judged by its exit status.

Before anything else, the runner sets on itself the data limit that the
service hands over in SANDBOX_DATA_LIMIT (bytes), and removes the variable.

After reading the program, stdin points at its standard input: an anonymous
in-memory file holding the m bytes, or /dev/null when m is 0 (the program
reads EOF instead of hanging); and the program runs as the __main__ module
of a file named main.py, so tracebacks and __name__ look exactly as they would under
`python3 main.py`. The runner's own frames are left out of tracebacks.
"""


def _main():
    # Everything is local: the program gets a clean __main__ namespace, and
    # this module's globals are cleared before it runs.
    import atexit
    import linecache
    import os
    import resource
    import sys
    import traceback

    # The data limit (heap and private mappings) the service hands over
    # (runtime/spec.go: dataLimit), soft and hard, so the program and every
    # process it starts inherit it: an allocation past it raises MemoryError
    # at once, below the container's memory limit. Set here, not by Docker,
    # so that it binds only this runner and its program.
    limit = os.environ.pop("SANDBOX_DATA_LIMIT", "")
    if limit.isdigit():
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (int(limit), int(limit)))
        except (OSError, ValueError):
            pass  # the container's memory limit still holds

    # Line buffering: what a program printed before it was killed (timeout,
    # memory) still reaches the caller, without a syscall per character.
    sys.stdout.reconfigure(line_buffering=True)
    stdin = sys.stdin.buffer
    header = stdin.readline().rstrip(b"\n").split(b" ")
    if len(header) != 3 or len(header[0]) != 32 or not all(f.isdigit() for f in header[1:]):
        sys.stderr.write("sandbox-run: malformed header\n")
        os._exit(2)
    token, size, insize = header[0], int(header[1]), int(header[2])
    src = stdin.read(size)
    data = stdin.read(insize) if insize else b""
    if len(src) != size or len(data) != insize:
        os._exit(2)  # the service went away mid-program: nothing to run
    if data:
        fd = os.memfd_create("stdin", 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    else:
        fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    del data

    prefix = b"\0sandboxd:" + token + b":"
    pid = os.getpid()
    std = (sys.stdout, sys.stderr)
    ended = []  # the program's exit status, once it has ended

    def usage():
        # CPU seconds and peak RSS (KiB) of this process and its children.
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
        return cpu, max(me.ru_maxrss, kids.ru_maxrss)

    def report_end():
        # Registered first, so it runs last at exit.
        if not ended or os.getpid() != pid:
            return
        try:
            for f in (sys.stdout, sys.stderr) + std:
                f.flush()
        except Exception:
            return  # output may be missing: let the exit status speak
        cpu, rss = usage()
        cpu_ms = min(max(0, round((cpu - start_cpu) * 1000)), 9999999999)
        marker = prefix + b"%03d %010d %010d\n" % (ended[0], cpu_ms, min(rss, 9999999999))
        try:
            os.write(1, marker)
            os.write(2, marker)
        except OSError:
            pass

    def exit_status(code):
        # What the interpreter makes of SystemExit(code) (Python/pythonrun.c).
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF if -(1 << 63) <= code < (1 << 63) else 255
        return 1  # the interpreter prints it to stderr

    atexit.register(report_end)
    start_cpu = usage()[0]
    os.write(1, prefix + b"go\n")

    # Tracebacks quote source lines as for a real main.py.
    text = src.decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    try:
        code = compile(src, "main.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        traceback.print_exception(type(exc), exc, None)
        ended.append(1)
        sys.exit(1)
    namespace = sys.modules["__main__"].__dict__
    builtins = namespace["__builtins__"]
    namespace.clear()
    namespace.update(__name__="__main__", __file__="main.py",
                     __builtins__=builtins, __doc__=None,
                     __package__=None, __spec__=None, __loader__=None)
    sys.argv = ["main.py"]
    sys.path.insert(0, os.getcwd())
    try:
        exec(code, namespace)
    except SystemExit as exc:
        ended.append(exit_status(exc.code))
        raise
    except BaseException as exc:  # report like the interpreter, minus our frame
        ended.append(1)
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        hook = sys.excepthook
        if hook is sys.__excepthook__:  # the C hook cannot quote main.py
            hook = traceback.print_exception
        hook(type(exc), exc.with_traceback(tb), tb)
        sys.exit(1)
    ended.append(0)


_main()
