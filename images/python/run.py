"""sandbox-run: the entry point of every sandbox container.

It is started before its program exists (a warm container waits here), with
everything it needs already imported. It speaks the service's runner
protocol (runtime/protocol.go) on its standard streams:

  stdin:   "<token> <n>\\n", then the n bytes of the program
  stdout:  "\\0sandboxd:<token>:go\\n" once the program is read, before it runs
  both:    "\\0sandboxd:<token>:<sss>\\n" once the program has ended and its
           output is flushed; <sss> is its exit status in 3 digits

The end marker lets the service answer without waiting for the container to
exit. It is written last at exit, after the program's threads and atexit
handlers, and only by this process (not a forked child). A program that ends
without it (os._exit, a signal, the OOM killer) is judged by its exit status.

After reading the program, stdin points at /dev/null (the program reads EOF
instead of hanging), and the program runs as the __main__ module of a file
named main.py, so tracebacks and __name__ look exactly as they would under
`python3 main.py`. The runner's own frames are left out of tracebacks.
"""


def _main():
    # Everything is local: the program gets a clean __main__ namespace, and
    # this module's globals are cleared before it runs.
    import atexit
    import linecache
    import os
    import sys
    import traceback

    # Line buffering: what a program printed before it was killed (timeout,
    # memory) still reaches the caller, without a syscall per character.
    sys.stdout.reconfigure(line_buffering=True)
    stdin = sys.stdin.buffer
    token, _, size = stdin.readline().rstrip(b"\n").partition(b" ")
    if len(token) != 32 or not size.isdigit():
        sys.stderr.write("sandbox-run: malformed header\n")
        os._exit(2)
    src = stdin.read(int(size))
    if len(src) != int(size):
        os._exit(2)  # the service went away mid-program: nothing to run
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)

    prefix = b"\0sandboxd:" + token + b":"
    pid = os.getpid()
    std = (sys.stdout, sys.stderr)
    ended = []  # the program's exit status, once it has ended

    def report_end():
        # Registered first, so it runs last at exit.
        if not ended or os.getpid() != pid:
            return
        try:
            for f in (sys.stdout, sys.stderr) + std:
                f.flush()
        except Exception:
            return  # output may be missing: let the exit status speak
        marker = prefix + b"%03d\n" % ended[0]
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
