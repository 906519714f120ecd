package hostile

import (
	"fmt"
	"os"

	"sandboxd"
)

// syscallPrelude defines call_(label, name, *args), which calls a libc
// function through ctypes and prints the label with "ok" or the errno's
// name, and try_, which does the same in a child process, so that a call
// that succeeds changes nothing for the next one.
const syscallPrelude = `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def call_(label, name, *args):
    ctypes.set_errno(0)
    r = getattr(libc, name)(*args)
    e = ctypes.get_errno()
    print(label, 'ok' if r != -1 else errno.errorcode.get(e, str(e)), flush=True)
def try_(label, name, *args):
    pid = os.fork()
    if pid == 0:
        call_(label, name, *args)
        os._exit(0)
    os.waitpid(pid, 0)
`

// kernelCases ask the kernel for what only a privileged process may do.
func kernelCases() []hostileCase {
	// Every case here forks a child per call: under gVisor the sandbox
	// may fail (runscSandboxFailed).
	ok := func(stdout ...string) answer {
		return answer{status: statuses(sandboxd.StatusOK), exit: []int{0}, stdout: stdout}
	}
	okOrRunscFailed := func(stdout ...string) map[string][]answer {
		return orRunscFailed(ok(stdout...))
	}
	return []hostileCase{
		{
			// Only the sandbox's own processes are there to trace: a host
			// process (this test's) does not exist in its PID namespace.
			// Inside, a child may trace its parent under runc (same user,
			// no Yama on the host); gVisor refuses it.
			name: "ptrace",
			code: syscallPrelude +
				"call_('attach-self', 'ptrace', 16, 1, None, None)\n" +
				fmt.Sprintf("call_('attach-host', 'ptrace', 16, %d, None, None)\n", os.Getpid()) +
				"try_('traceme', 'ptrace', 0, 0, None, None)\n" +
				"try_('seize-parent', 'ptrace', 0x4206, 1, None, None)\n",
			want: ok("attach-self EPERM\nattach-host ESRCH\ntraceme ok\nseize-parent ok\n"),
			per:  okOrRunscFailed("attach-self EPERM\nattach-host ESRCH\ntraceme ok\nseize-parent EPERM\n"),
		},
		{
			name: "mount",
			code: syscallPrelude +
				"try_('mount-tmpfs', 'mount', b'none', b'/tmp', b'tmpfs', 0, None)\n" +
				"try_('remount-root-rw', 'mount', b'none', b'/', None, 0x20, None)\n" +
				"try_('umount-tmp', 'umount2', b'/tmp', 2)\n" +
				"try_('chroot', 'chroot', b'/tmp')\n",
			want: ok("mount-tmpfs EPERM\nremount-root-rw EPERM\numount-tmp EPERM\nchroot EPERM\n"),
			per:  okOrRunscFailed("mount-tmpfs EPERM\nremount-root-rw EPERM\numount-tmp EPERM\nchroot EPERM\n"),
		},
		{
			name: "unshare",
			code: syscallPrelude +
				"for label, flags in [('user', 0x10000000), ('mount', 0x20000), ('net', 0x40000000), ('pid', 0x20000000),\n" +
				"                     ('user+mount+net', 0x10000000 | 0x20000 | 0x40000000)]:\n" +
				"    try_('unshare-' + label, 'unshare', flags)\n",
			want: ok("unshare-user EPERM\nunshare-mount EPERM\nunshare-net EPERM\nunshare-pid EPERM\nunshare-user+mount+net EPERM\n"),
			// gVisor implements user and mount namespaces inside its own
			// kernel: made there, they reach nothing of the host's.
			per: okOrRunscFailed("unshare-user ok\nunshare-mount ok\nunshare-net EPERM\nunshare-pid EPERM\nunshare-user+mount+net ok\n"),
		},
		{
			name: "raw-sockets",
			code: "import errno, socket\n" +
				"for label, args in [('inet-raw', (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),\n" +
				"                    ('inet6-raw', (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),\n" +
				"                    ('packet-raw', (socket.AF_PACKET, socket.SOCK_RAW, 0)),\n" +
				"                    ('packet-dgram', (socket.AF_PACKET, socket.SOCK_DGRAM, 0))]:\n" +
				"    try:\n        socket.socket(*args).close()\n        print(label, 'ok')\n" +
				"    except OSError as e:\n        print(label, errno.errorcode[e.errno])\n",
			want: ok("inet-raw EPERM\ninet6-raw EPERM\npacket-raw EPERM\npacket-dgram EPERM\n"),
		},
		{
			// Hard limits only go down; the soft one stops at the hard one.
			name: "ulimits",
			code: "import errno, resource\n" +
				"def attempt(label, res, limits):\n    try:\n        resource.setrlimit(res, limits)\n        print(label, 'changed')\n" +
				"    except (ValueError, OSError) as e:\n        print(label, type(e).__name__)\n" +
				"attempt('nofile-hard-up', resource.RLIMIT_NOFILE, (256, 1 << 20))\n" +
				"attempt('fsize-hard-up', resource.RLIMIT_FSIZE, (16 << 20, resource.RLIM_INFINITY))\n" +
				"attempt('core-up', resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n" +
				"attempt('core-soft-up', resource.RLIMIT_CORE, (1 << 20, resource.RLIM_INFINITY))\n" +
				"print('core', resource.getrlimit(resource.RLIMIT_CORE))\n" +
				"attempt('nofile-down', resource.RLIMIT_NOFILE, (128, 128))\n" +
				"attempt('nofile-back-up', resource.RLIMIT_NOFILE, (256, 256))\n" +
				"files = []\ntry:\n    while True:\n        files.append(open('/dev/null'))\n" +
				"except OSError as e:\n    print('open', errno.errorcode[e.errno], len(files) <= 128)\n",
			want: ok("nofile-hard-up ValueError\nfsize-hard-up ValueError\ncore-up ValueError\ncore-soft-up ValueError\ncore (0, 0)\nnofile-down changed\nnofile-back-up ValueError\nopen EMFILE True\n"),
		},
	}
}
