"""sandbox-run: the entry point of every sandbox container.

It reads the whole program from stdin, points stdin at /dev/null (so the
program reads EOF instead of hanging), and runs the program as the __main__
module of a file named main.py, so tracebacks and __name__ look exactly as
they would under `python3 main.py`. The runner's own frames are left out of
tracebacks.
"""


def _main():
    # Everything is local: the program gets a clean __main__ namespace, and
    # this module's globals are cleared before it runs.
    import os
    import sys

    src = sys.stdin.buffer.read()
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    # Line buffering: what a program printed before it was killed (timeout,
    # memory) still reaches the caller, without a syscall per character.
    sys.stdout.reconfigure(line_buffering=True)
    # Tracebacks quote source lines as for a real main.py.
    import linecache
    text = src.decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    try:
        code = compile(src, "main.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        import traceback
        traceback.print_exception(type(exc), exc, None)
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
    except SystemExit:
        raise
    except BaseException as exc:  # report like the interpreter, minus our frame
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        hook = sys.excepthook
        if hook is sys.__excepthook__:  # the C hook cannot quote main.py
            import traceback
            hook = traceback.print_exception
        hook(type(exc), exc.with_traceback(tb), tb)
        sys.exit(1)


_main()
