"""sandbox-run: the entry point of every sandbox container.

It is started before its program exists (a warm container waits here), with
everything it needs already imported. It speaks the service's runner
protocol, version 7 (internal/runnerproto), on its standard streams. Its
first line decides: a program's header (below) runs one program; a session
header runs many (Sessions, below). One program:

  stdin:   "<token> <n> <m> <f> <k> <maxfiles> <maxbytes> <language>\\n", then
           the n bytes of the program, the m bytes of its standard input, and
           the k bytes of its f files in, as records (below); <maxfiles> and
           <maxbytes> are the caps on the files out; <language> is the
           program's, and this runner runs python alone: any other is the
           program's error (the ack, a line on stderr, exit status 1)
  stdout:  "\\0sandboxd:<token>:go\\n" once the program is read, before it runs;
           "...:gl\\n" instead when the program came before the runner was
           ready for it, while the interpreter was still starting or the
           preloaded modules importing (the service then counts the time
           limit from the ack)
  both:    "\\0sandboxd:<token>:<sss> <cpu> <rss> <len> <t>\\n" once the
           program has ended and its output is flushed; <sss> is its exit
           status in 3 digits, <cpu> its CPU milliseconds and <rss> its peak
           resident memory in KiB, <len> the length of the files section, 10
           digits each, and <t> 1 when files out were left out or listed
           without content, else 0; on stdout the <len> bytes of the files
           section follow the marker
  record:  "<kind> <namelen> <size>\\n<name>[<content>]", decimal numbers;
           kind "c" carries the <size> bytes of content, kind "l" lists a file
           out of <size> bytes without them

Files in are written into the working directory (/tmp) before the program
starts, each name checked again here (relative, no empty, "." or ".." part,
no control character or backslash) and each part opened without following
a symlink. Files out are the regular files under /tmp that are new or whose
content differs from the file written in, in name order: found by a walk
that follows no symlink (at most MAX_ENTRIES entries, MAX_DEPTH levels),
opened with O_NOFOLLOW|O_NONBLOCK and read only when fstat says they are
regular files, never past the caps. The first files that fit the caps
(<maxfiles> of them, <maxbytes> bytes in all) carry their content, the rest
are listed (at most LIST_EXTRA of them).

With SANDBOX_PRELOAD (a comma-separated list of modules, set by the data
image), the runner imports those modules before it reads its program. When
matplotlib.pyplot is among them, plt.show() saves every open figure as
/tmp/figure-<n>.png (n counting from 1 across the run) and closes them, and
the figures still open when the program ends are saved the same way before
the files out are collected.

The usage in the end marker is measured here, where it costs nothing:
<cpu> is user plus system time (getrusage of this process and of its
reaped children) since just before the program started, so the runner's own
start-up is left out; <rss> is the larger of this process's peak resident
set and that of its largest reaped child (ru_maxrss), the interpreter's own
few MiB included, as `python3 main.py` would show.

The end marker lets the service answer without waiting for the container to
exit. It is written last at exit, after the program's threads and atexit
handlers, and only by this process (not a forked child). A program that ends
without it (os._exit, a signal, the OOM killer) is judged by its exit status,
and returns no files.

Before anything else, the runner sets on itself the data limit that the
service hands over in SANDBOX_DATA_LIMIT (bytes), and removes the variable.

Sessions. "S <token> <maxvalue> <language>\\n" switches the runner into its
loop (a language other than python makes every call the program's error,
as a call's header naming one does). It
dups its stdin, stdout and stderr to private descriptors (non-inheritable),
acks the loop with "\\0sandboxd:<token>:go\\n" on stdout, and then, per
call, reads a program's header (a fresh token each call), its code, stdin
and files in from the private stdin, and:

  - restores descriptors 0 (the call's stdin), 1 and 2 and fresh sys.stdin,
    sys.stdout and sys.stderr (a program that closed or replaced them gets
    them back), the working directory /tmp, and its SIGINT handler;
  - writes the files in (replacing a file or link of that name, never
    following one), notes every file under /tmp as (inode, size, mtime_ns)
    (with a digest for one changed so recently that its time may not move),
    and acks the call on both stdout and stderr: what comes before the ack
    on either was written between calls;
  - runs the code in the one __main__ module the session keeps: parsed with
    ast, the last statement, when it is an expression, evaluated apart and
    its value, when not None, repr'd (an exception in repr is the call's own
    error). SIGINT raises KeyboardInterrupt only while this runs (status
    130); between calls it is ignored. SystemExit ends the call (its
    status), not the session;
  - saves the open figures, and writes on both private streams
    "\\0sandboxd:<token>:<sss> <cpu> <rss> <len> <t> <v> <vlen> <i>\\n",
    protocol 4's fields then: <v> 0 for no value, 1 for a value of <vlen>
    bytes, 2 for one cut at <maxvalue> bytes (<vlen> in 10 digits), <i> 1
    when the interrupt ended the call; on stdout the files section follows
    (the files new or changed since the call began, and the files in whose
    bytes changed), then the value's <vlen> bytes (UTF-8). <cpu> is the
    call's; <rss> its own peak where the kernel lets the runner reset it
    (/proc/self/clear_refs), else the session's so far;
  - points descriptors 1 and 2 at /dev/null until the next call, so what a
    thread writes between calls never reaches the service.

The session ends when stdin ends (exit 0) or at a header that does not parse
(exit 2): a program that reads the protocol stream itself breaks only its
own session. A forked child that comes back to the loop exits at once.

After reading the program, stdin points at its standard input: an anonymous
in-memory file holding the m bytes, or /dev/null when m is 0 (the program
reads EOF instead of hanging); and the program runs as the __main__ module
of a file named main.py, so tracebacks and __name__ look exactly as they would under
`python3 main.py`. The runner's own frames are left out of tracebacks.
"""


# The bounds of the files out (internal/runnerproto holds the same numbers):
# the walk visits at most MAX_ENTRIES entries and MAX_DEPTH directory levels,
# and at most LIST_EXTRA files are listed without content past the caps.
MAX_ENTRIES = 10000
MAX_DEPTH = 32
LIST_EXTRA = 64


def _connect():
    """With SANDBOX_IO, the path of the service's socket for this container
    (runtime/socket.go), connect to it twice and make the connections the
    standard streams: the first stdin and stdout, the second stderr. The
    program and its output then go straight between the service and this
    runner. Without it they stay the attach connection's pipes. Done first,
    so the service can hand a program over while the rest starts."""
    import os
    path = os.environ.pop("SANDBOX_IO", "")
    if not path:
        return
    import _socket
    fds = []
    for _ in range(2):
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.connect(path)
        fds.append(s.detach())
    os.dup2(fds[0], 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    os.close(fds[0])
    os.close(fds[1])


def _main():
    _connect()
    # Everything is local: the program gets a __main__ module of its own.
    import atexit
    import linecache
    import os
    import resource
    import select
    import sys
    import traceback

    bounds = (MAX_ENTRIES, MAX_DEPTH, LIST_EXTRA)

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

    # The modules the image asks for are imported while the container is
    # warm, before its program exists; a failure here is the image's, and
    # ends the runner before it acknowledges any program.
    preload = [m for m in os.environ.pop("SANDBOX_PRELOAD", "").split(",") if m]
    for module in preload:
        __import__(module)
    figures = _figures(sys.modules["matplotlib.pyplot"]) if "matplotlib.pyplot" in preload else None
    files = _files(bounds)
    # The interpreter builds its parser's and compiler's state at its first
    # compile: 1.2-1.5 ms on a slow host, more than the rest of a hello
    # world's way from the ack to the end marker. Paid here, while the
    # container waits for its program, not by the program's answer.
    compile("pass", "<warm>", "exec", dont_inherit=True)
    # Whether the program came before the runner was ready for it (in a
    # container started for its run, while the interpreter was starting and
    # the modules importing): then the ack says so ("gl"), and the service
    # counts the program's time limit from the ack, not from the hand-over,
    # so the runner's own start costs the program none of it.
    late = bool(select.select([0], [], [], 0)[0])

    # Line buffering: what a program printed before it was killed (timeout,
    # memory) still reaches the caller, without a syscall per character.
    sys.stdout.reconfigure(line_buffering=True)
    stdin = sys.stdin.buffer
    line = stdin.readline()
    if line.startswith(b"S "):
        _session(line, stdin, files, figures, bounds)  # never returns
    header = _header(line)
    if header is None:
        sys.stderr.write("sandbox-run: malformed header\n")
        os._exit(2)
    token, size, insize, nfiles, fsize, maxfiles, maxbytes, language = header
    src = stdin.read(size)
    data = stdin.read(insize) if insize else b""
    blob = stdin.read(fsize) if fsize else b""
    if len(src) != size or len(data) != insize or len(blob) != fsize:
        os._exit(2)  # the service went away mid-program: nothing to run
    inputs = files.parse(blob, nfiles)
    if inputs is None:
        sys.stderr.write("sandbox-run: malformed files\n")
        os._exit(2)
    del blob
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
    # Written before the program starts; a failure (a name that is not
    # relative after all, a full /tmp), like a language this runner does
    # not run, is told after the ack, as the program's own failure would be.
    failed = _refusal(language)
    written = {}
    if failed is None:
        try:
            written = files.write(inputs)
        except (OSError, ValueError) as exc:
            failed = "sandbox-run: cannot write the files in: %s\n" % exc
    del inputs

    prefix = b"\0sandboxd:" + token + b":"
    pid = os.getpid()
    std = (sys.stdout, sys.stderr)
    ended = []  # the program's exit status, once it has ended

    usage = _usage
    def report_end(_runner=sys.modules["__main__"]):
        # _runner keeps this module alive once __main__ is the program's.
        # Registered after the preloaded modules' own handlers, so it runs
        # before them (matplotlib's closes every figure) and after the
        # program's.
        if not ended or os.getpid() != pid:
            return
        if figures is not None:
            try:
                figures()
            except Exception as exc:
                sys.stderr.write("sandbox-run: cannot save the open figures: %r\n" % (exc,))
        try:
            for f in (sys.stdout, sys.stderr) + std:
                f.flush()
        except Exception:
            return  # output may be missing: let the exit status speak
        cpu, rss = usage()
        cpu_ms = min(max(0, round((cpu - start_cpu) * 1000)), 9999999999)
        try:
            section, cut = files.collect(written, maxfiles, maxbytes)
        except Exception:  # MemoryError, or a bug: no files rather than no answer
            section, cut = [], True
        marker = prefix + b"%03d %010d %010d %010d %d\n" % (
            ended[0], cpu_ms, min(rss, 9999999999), sum(len(b) for b in section), cut)
        try:
            for chunk in [marker] + section:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(1, view):]
            os.write(2, marker)
        except OSError:
            pass

    atexit.register(report_end)
    start_cpu = usage()[0]
    os.write(1, prefix + (b"gl\n" if late else b"go\n"))
    if failed:
        sys.stderr.write(failed)
        ended.append(1)
        sys.exit(1)

    # Tracebacks quote source lines as for a real main.py.
    text = src.decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    try:
        code = compile(src, "main.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        traceback.print_exception(type(exc), exc, None)
        ended.append(1)
        sys.exit(1)
    # The program's __main__ is a module of its own: what it defines (a
    # global named max, say) never reaches the runner's functions, which
    # still run at its exit, and the runner's names never reach it.
    main = type(sys)("__main__")
    main.__file__ = "main.py"
    main.__builtins__ = sys.modules["builtins"]
    sys.modules["__main__"] = main
    namespace = main.__dict__
    sys.argv = ["main.py"]
    sys.path.insert(0, os.getcwd())
    try:
        exec(code, namespace)
    except SystemExit as exc:
        ended.append(_exit_status(exc.code))
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


def _header(line):
    """The fields of a program's header line, (token, n, m, f, k, maxfiles,
    maxbytes, language), or None when it is malformed."""
    header = line.rstrip(b"\n").split(b" ")
    if len(header) != 8 or len(header[0]) != 32 or not all(f.isdigit() for f in header[1:7]):
        return None
    if not _language_ok(header[7]):
        return None
    return (header[0],) + tuple(int(f) for f in header[1:7]) + (header[7],)


def _language_ok(field):
    """Whether a header's language field has a language's shape: 1 to 32
    lower-case ASCII letters (internal/runnerproto's rule)."""
    return 0 < len(field) <= 32 and all(0x61 <= c <= 0x7A for c in field)


def _refusal(*languages):
    """The program's error for a language this runner does not run, or None
    when every one of languages is python."""
    for language in languages:
        if language != b"python":
            return "sandbox-run: this sandbox runs python only; it cannot run %s\n" % (
                language.decode("ascii", "replace"),)
    return None


def _usage():
    """CPU seconds and peak RSS (KiB) of this process and its children."""
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return cpu, max(me.ru_maxrss, kids.ru_maxrss)


def _exit_status(code):
    """What the interpreter makes of SystemExit(code) (Python/pythonrun.c)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if -(1 << 63) <= code < (1 << 63) else 255
    return 1  # the interpreter prints it to stderr


def _session(line, stdin, files, figures, bounds):
    """Run the session whose header is line: "S <token> <maxout> <language>\\n". Never
    returns: the session ends when the service closes stdin (exit 0) or
    sends a malformed header (exit 2)."""
    import os
    import signal
    import sys

    head = line.rstrip(b"\n").split(b" ")
    if len(head) != 4 or len(head[1]) != 32 or not head[2].isdigit() or not _language_ok(head[3]):
        sys.stderr.write("sandbox-run: malformed session header\n")
        os._exit(2)
    maxout = int(head[2])
    language = head[3]
    # The protocol's streams, private: a program that closes or replaces
    # 0, 1 and 2 gets them back before the next call, and the markers
    # never depend on what it did to them. os.dup makes them
    # non-inheritable, so no program it execs holds them.
    pin, pout, perr = os.dup(0), os.dup(1), os.dup(2)
    # Between calls 1 and 2 point here: what a thread writes then is no
    # call's output, and is dropped before it costs dockerd anything.
    quiet = os.open(os.devnull, os.O_WRONLY)
    reader = _Reader(pin, _pending(stdin))
    _write(pout, b"\0sandboxd:" + head[1] + b":go\n")
    main = type(sys)("__main__")
    main.__file__ = "main.py"
    main.__builtins__ = sys.modules["builtins"]
    sys.modules["__main__"] = main
    sys.argv = ["main.py"]
    sys.path.insert(0, files.root)
    state = {"running": False, "fired": False}

    def interrupt(signum, frame):
        # The service's interrupt at a call's timeout; ignored between
        # calls, when there is nothing to interrupt.
        if state["running"]:
            state["fired"] = True
            raise KeyboardInterrupt

    while True:
        signal.signal(signal.SIGINT, interrupt)
        call = _read_call(reader, files)
        call["refusal"] = _refusal(language, call["language"])
        _restore(call.pop("stdin"), pout, perr)
        os.chdir(files.root)
        state["fired"] = False
        report = _call(call, main.__dict__, files, figures, state, interrupt, maxout)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        for chunk in [call["prefix"] + report[0]] + report[1]:
            _write(pout, chunk)
        _write(perr, call["prefix"] + report[0])


def _pending(stdin):
    """The bytes stdin's buffer read past the session header (the service
    sends none before the loop's ack, but nothing may be lost)."""
    import os
    os.set_blocking(0, False)
    try:
        return stdin.read1(1 << 16) or b""
    except (BlockingIOError, TypeError):
        return b""
    finally:
        os.set_blocking(0, True)


class _Reader:
    """The protocol's input on a private descriptor: lines and exact sizes,
    read without a buffer the program could see."""

    def __init__(self, fd, pending):
        self.fd, self.buf = fd, bytearray(pending)

    def _fill(self):
        import os
        chunk = os.read(self.fd, 1 << 16)
        self.buf += chunk
        return bool(chunk)

    def readline(self, limit):
        """A line of at most limit bytes, its newline included; b"" at the end
        of the stream, or a line without a newline when it is too long."""
        while True:
            nl = self.buf.find(b"\n", 0, limit)
            if nl >= 0 or len(self.buf) >= limit:
                end = nl + 1 if nl >= 0 else limit
                line = bytes(self.buf[:end])
                del self.buf[:end]
                return line
            if not self._fill():
                line = bytes(self.buf)
                self.buf.clear()
                return line

    def read(self, n):
        """n bytes, fewer only at the end of the stream."""
        while len(self.buf) < n and self._fill():
            pass
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


def _write(fd, data):
    import os
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_call(reader, files):
    """The next call's header, code, stdin and files in; the session ends
    at the end of the stream, or at anything malformed (a program that
    read the stream itself took part of it)."""
    import os
    import sys
    line = reader.readline(256)
    if not line:
        os._exit(0)  # the service ended the session
    header = _header(line) if line.endswith(b"\n") else None
    if header is None:
        os.write(2, b"sandbox-run: malformed header\n")
        os._exit(2)
    token, size, insize, nfiles, fsize, maxfiles, maxbytes, language = header
    src, data, blob = reader.read(size), reader.read(insize), reader.read(fsize)
    if len(src) != size or len(data) != insize or len(blob) != fsize:
        os._exit(2)
    inputs = files.parse(blob, nfiles)
    if inputs is None:
        sys.stderr.write("sandbox-run: malformed files\n")
        os._exit(2)
    return {"prefix": b"\0sandboxd:" + token + b":", "src": src, "stdin": data, "inputs": inputs,
            "maxfiles": maxfiles, "maxbytes": maxbytes, "language": language}


def _restore(data, pout, perr):
    """Give the call its descriptors 0, 1 and 2 and fresh sys.std*: its
    standard input on 0, the protocol's streams on 1 and 2; flush first
    what the last call (or a thread) left in the old ones."""
    import os
    import sys
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass  # closed or replaced by the program
    if data:
        fd = os.memfd_create("stdin", 0)
        _write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    else:
        fd = os.open(os.devnull, os.O_RDONLY)
    if fd != 0:  # 0 itself when the last call closed it
        os.dup2(fd, 0)
        os.close(fd)
    os.dup2(pout, 1)
    os.dup2(perr, 2)
    sys.stdin = sys.__stdin__ = open(0, "r", encoding="utf-8", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace",
                                       closefd=False)


def _drop_handler(tb, code):
    """The traceback tb without the runner's interrupt handler's frame, which
    raised the KeyboardInterrupt where the program was."""
    if tb is None or tb.tb_frame.f_code is code:
        return None
    last = tb
    while last.tb_next is not None and last.tb_next.tb_frame.f_code is not code:
        last = last.tb_next
    last.tb_next = None
    return tb


def _split(src):
    """The call's code compiled as main.py: the statements to exec, and the
    last statement's expression to eval when it is one (else None)."""
    import ast
    tree = ast.parse(src, "main.py")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, "main.py", "exec", dont_inherit=True)
    return body, (compile(last, "main.py", "eval", dont_inherit=True) if last is not None else None)


def _call(call, namespace, files, figures, state, interrupt, maxout):
    """Run one call in namespace and return its end report: the marker's
    tail, and the chunks that follow it on stdout (files, then value)."""
    import linecache
    import os
    import signal
    import sys
    import traceback

    pid = os.getpid()
    failed = call["refusal"]
    written = {}
    if failed is None:
        try:
            written = files.write(call["inputs"], replace=True)
        except (OSError, ValueError) as exc:
            failed = "sandbox-run: cannot write the files in: %s\n" % exc
    before = files.snapshot(written)
    peak = _peak_reset()
    start_cpu = _usage()[0]
    # The ack on both streams: what came before it on either was written
    # between calls (by a thread, or a process the last call left).
    os.write(1, call["prefix"] + b"go\n")
    os.write(2, call["prefix"] + b"go\n")
    text = call["src"].decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    status, value = 0, None
    try:
        if failed:
            sys.stderr.write(failed)
            status = 1
        else:
            try:
                state["running"] = True
                body, last = _split(call["src"])
                exec(body, namespace)
                if last is not None:
                    got = eval(last, namespace)
                    value = None if got is None else repr(got)
            finally:
                state["running"] = False
    except SystemExit as exc:
        status = _exit_status(exc.code)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write("%s\n" % (exc.code,))
    except BaseException as exc:  # report like the interpreter, minus our frame
        status = 130 if isinstance(exc, KeyboardInterrupt) else 1
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        if isinstance(exc, SyntaxError):
            tb = None
        elif state["fired"]:
            tb = _drop_handler(tb, interrupt.__code__)
        hook = sys.excepthook
        if hook is sys.__excepthook__:  # the C hook cannot quote main.py
            hook = traceback.print_exception
        try:
            hook(type(exc), exc.with_traceback(tb), tb)
        except Exception:
            pass
    signal.signal(signal.SIGINT, interrupt)
    if os.getpid() != pid:
        os._exit(status)  # a forked child that came back here: it is no runner
    if figures is not None:
        try:
            figures()
        except Exception as exc:
            sys.stderr.write("sandbox-run: cannot save the open figures: %r\n" % (exc,))
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    cpu, rss = _usage()
    rss = _peak(peak, rss)
    cpu_ms = min(max(0, round((cpu - start_cpu) * 1000)), 9999999999)
    try:
        section, cut = files.collect(written, call["maxfiles"], call["maxbytes"], before)
    except Exception:
        section, cut = [], True
    raw = b""
    if value is not None:
        raw = value.encode("utf-8", "backslashreplace")
    vflag = 0 if value is None else (2 if len(raw) > maxout else 1)
    raw = raw[:maxout]
    tail = b"%03d %010d %010d %010d %d %d %010d %d\n" % (
        status & 0xFF, cpu_ms, min(rss, 9999999999), sum(len(b) for b in section), cut, vflag, len(raw),
        state["fired"])
    return tail, section + [raw]


def _peak_reset():
    """Reset this process's peak resident size, so that a call's peak is
    its own, and return the children's peak so far; None when the kernel
    does not let it (gVisor): the peak is then the session's so far."""
    import resource
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def _peak(kids, fallback):
    """The call's peak resident size (KiB): this process's since
    _peak_reset, or that of a child reaped during the call when larger; or
    fallback (the session's peak so far) when it could not be reset."""
    import resource
    if kids is None:
        return fallback
    try:
        with open("/proc/self/status", "rb") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith(b"VmHWM:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return fallback
    now = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(hwm, now if now > kids else 0)


def _settle(newest):
    """Wait until the clock that stamps file times (CLOCK_REALTIME_COARSE:
    a change's mtime is never before it) reads more than newest (ns) plus
    1 ms, at most 20 ms; not at all for a time further ahead, which only a
    program's utime sets (any change moves the file's time back to now)."""
    import time

    def coarse():
        try:
            return time.clock_gettime_ns(5)  # CLOCK_REALTIME_COARSE
        except OSError:
            return time.time_ns()
    target = newest + 1_000_000
    now = coarse()
    if target - now > 20_000_000:
        return
    end = time.monotonic_ns() + 20_000_000
    while now <= target and time.monotonic_ns() < end:
        time.sleep(0.0005)
        now = coarse()


def _figures(plt):
    """Make plt.show() save every open figure as /tmp/figure-<n>.png and
    close them, and return the function that does so, for the end."""
    count = [0]

    def save():
        nums = plt.get_fignums()  # a program that drew nothing pays this alone
        for num in nums:
            count[0] += 1
            plt.figure(num).savefig("/tmp/figure-%d.png" % count[0])
        if nums:
            plt.close("all")

    def show(*args, **kwargs):
        """Save every open figure as /tmp/figure-<n>.png (n counting from 1
        across the run) and close them: the sandbox has no display."""
        save()

    show.__module__ = plt.__name__
    plt.show = show
    return save


class _files:
    """The files in and out of one run, seen from /tmp (the working
    directory): names checked, nothing followed, every read bounded."""

    def __init__(self, bounds):
        import hashlib
        import os
        import stat
        self.os, self.stat, self.sha256 = os, stat, hashlib.sha256
        self.max_entries, self.max_depth, self.list_extra = bounds
        # The working directory at the start, /tmp: a program may chdir.
        self.root = os.getcwd()
        nofollow = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
        self.dir_flags = os.O_RDONLY | os.O_DIRECTORY | nofollow
        self.file_flags = os.O_RDONLY | os.O_NONBLOCK | nofollow

    @staticmethod
    def valid(name):
        """Whether name is relative, with no empty, "." or ".." part, no
        control character or backslash, at most 1024 bytes (255 a part)."""
        try:
            raw = name.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8
            return False
        if not raw or len(raw) > 1024:
            return False
        if any(c < 32 or c == 127 or c == 92 for c in raw):
            return False
        if any(0x80 <= ord(c) <= 0x9F for c in name):
            return False
        return all(p not in ("", ".", "..") and len(p.encode()) <= 255 for p in name.split("/"))

    def parse(self, blob, count):
        """The (name, content) pairs of count records of kind "c" filling
        blob exactly, or None."""
        out, pos = [], 0
        for _ in range(count):
            nl = blob.find(b"\n", pos, pos + 32)
            head = blob[pos:nl].split(b" ") if nl >= 0 else []
            if len(head) != 3 or head[0] != b"c" or not (head[1].isdigit() and head[2].isdigit()):
                return None
            nlen, size = int(head[1]), int(head[2])
            name, content = blob[nl + 1:nl + 1 + nlen], blob[nl + 1 + nlen:nl + 1 + nlen + size]
            if len(name) != nlen or len(content) != size:
                return None
            out.append((name.decode("utf-8", "surrogateescape"), content))
            pos = nl + 1 + nlen + size
        return out if pos == len(blob) else None

    def write(self, inputs, replace=False):
        """Write each file in under the working directory, parents created,
        nothing followed, nothing overwritten (with replace, in a session, a
        file or link of that name is unlinked first, never followed); return
        {name: (size, sha256)}."""
        os = self.os
        written = {}
        for name, content in inputs:
            if not self.valid(name):
                raise ValueError("%r is not a relative name" % name)
            parts = name.split("/")
            dfd = os.open(self.root, self.dir_flags)
            try:
                for part in parts[:-1]:
                    try:
                        os.mkdir(part, 0o755, dir_fd=dfd)
                    except FileExistsError:
                        pass
                    sub = os.open(part, self.dir_flags, dir_fd=dfd)
                    os.close(dfd)
                    dfd = sub
                if replace:
                    try:
                        os.unlink(parts[-1], dir_fd=dfd)
                    except FileNotFoundError:
                        pass
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644, dir_fd=dfd)
                try:
                    view = memoryview(content)
                    while view:
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
            except OSError as exc:
                raise OSError(exc.errno, "%s: %s" % (name, exc.strerror)) from None
            finally:
                os.close(dfd)
            written[name] = (len(content), self.sha256(content).digest())
        return written

    def walk(self):
        """The regular files under the working directory as sorted (name,
        size, (inode, size, mtime_ns)) triples, and whether the walk was cut
        short by its bounds or skipped a name it cannot return."""
        os = self.os
        found, state = [], {"visited": 0, "cut": False}

        def scan(fd, prefix, depth):
            with os.scandir(fd) as it:
                for entry in it:
                    if state["visited"] >= self.max_entries:
                        state["cut"] = True
                        return
                    state["visited"] += 1
                    name = prefix + entry.name
                    if not self.valid(name):
                        state["cut"] = True
                    elif entry.is_dir(follow_symlinks=False):
                        if depth >= self.max_depth:
                            state["cut"] = True
                            continue
                        try:
                            sub = os.open(entry.name, self.dir_flags, dir_fd=fd)
                        except OSError:
                            state["cut"] = True
                            continue
                        try:
                            scan(sub, name + "/", depth + 1)
                        finally:
                            os.close(sub)
                    elif entry.is_file(follow_symlinks=False):
                        try:
                            st = entry.stat(follow_symlinks=False)
                            found.append((name, st.st_size, (st.st_ino, st.st_size, st.st_mtime_ns)))
                        except OSError:
                            pass  # gone meanwhile

        root = os.open(self.root, self.dir_flags)
        try:
            scan(root, "", 1)
        finally:
            os.close(root)
        found.sort()
        return found, state["cut"]

    def read(self, name, limit):
        """(size, content) of the regular file name, content None when it
        holds more than limit bytes; None when it is no regular file (or
        is gone). Every part is opened without following a symlink, the
        file without blocking, and it is read only when fstat says it is a
        regular file, never past limit + 1 bytes."""
        os = self.os
        parts = name.split("/")
        try:
            dfd = os.open(self.root, self.dir_flags)
        except OSError:
            return None
        try:
            for part in parts[:-1]:
                sub = os.open(part, self.dir_flags, dir_fd=dfd)
                os.close(dfd)
                dfd = sub
            fd = os.open(parts[-1], self.file_flags, dir_fd=dfd)
        except OSError:
            return None
        finally:
            os.close(dfd)
        try:
            st = os.fstat(fd)
            if not self.stat.S_ISREG(st.st_mode):
                return None
            chunks, got = [], 0
            while got <= limit:
                chunk = os.read(fd, min(limit + 1 - got, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            if got > limit:
                return max(st.st_size, got), None
            return got, b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def unchanged(self, name, size, written):
        """Whether name is a file in, still of its size and content."""
        if name not in written or written[name][0] != size:
            return False
        got = self.read(name, size)
        return got is not None and got[1] is not None and self.sha256(got[1]).digest() == written[name][1]

    def snapshot(self, written):
        """What a session's call starts with: {name: signature} of the
        regular files under the working directory, once the clock that
        stamps file times has moved past the newest not in written (the
        files in, compared by content), so that a file the call changes,
        even at once and to the same size, gets another signature
        (_settle). No file is read: a call after one that left a large
        file costs no more than one after a small file."""
        found, _ = self.walk()
        _settle(max((sig[2] for name, _, sig in found if name not in written), default=0))
        return {name: sig for name, _, sig in found}

    @staticmethod
    def same(name, sig, before):
        """Whether name is as the snapshot before saw it."""
        return before is not None and before.get(name) == sig

    def collect(self, written, maxfiles, maxbytes, before=None):
        """The files section of the end marker: the files out as records
        (a list of byte strings, sent one after the other), and whether any
        was left out or listed without content. With before (a session's
        snapshot), a file not written in is out only when new or changed
        since."""
        found, cut = self.walk()
        section, used, kept, listed = [], 0, 0, 0
        for name, size, sig in found:
            if self.unchanged(name, size, written):
                continue
            if name not in written and self.same(name, sig, before):
                continue
            if kept + listed >= maxfiles + self.list_extra:
                cut = True
                break
            got = self.read(name, maxbytes - used) if kept < maxfiles and size <= maxbytes - used else (size, None)
            if got is None:
                continue  # no longer a regular file
            raw = name.encode("utf-8")
            if got[1] is None:
                section.append(b"l %d %d\n%s" % (len(raw), got[0], raw))
                listed += 1
                cut = True
            else:
                section.append(b"c %d %d\n%s" % (len(raw), got[0], raw))
                section.append(got[1])
                used += got[0]
                kept += 1
        return section, cut


_main()
