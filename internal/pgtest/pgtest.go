// Package pgtest starts a throwaway PostgreSQL server for tests: initdb in
// a temporary directory as an unprivileged user, listening on 127.0.0.1
// only on a free port, with a random password, stopped when the test
// binary ends. Tests get a fresh database each from the one server.
//
// A test package that uses it runs its tests through Main, so the server is
// stopped however the tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd/internal/testenv"
)

// binDir is where Debian's postgresql package puts the server's binaries:
// the newest /usr/lib/postgresql/N/bin (15 on bookworm). PGTEST_BINDIR
// overrides it.
func binDir() string {
	if d := os.Getenv("PGTEST_BINDIR"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestN := "/usr/lib/postgresql/15/bin", 0
	for _, d := range dirs {
		if n, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil && n > bestN {
			best, bestN = d, n
		}
	}
	return best
}

// Server is a running throwaway PostgreSQL.
type Server struct {
	// Dir is the data directory.
	Dir string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Password is the password of the superuser "postgres".
	Password string
	bin      string
	asUser   string
	uid, gid int
}

var (
	once    sync.Once
	shared  *Server
	initErr error
	dbSeq   int
	dbMu    sync.Mutex
)

// Wanted reports whether tests that need PostgreSQL must run: with
// SANDBOXD_INTEGRATION=1, SANDBOXD_INTEROP=1 or CI=true.
func Wanted() bool {
	return testenv.Integration() || testenv.Interop()
}

// Main runs the tests of a package and stops the shared server, if one was
// started, before exiting with the tests' code.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared server if one was started; a TestMain that
// does more than Main calls it after m.Run.
func StopShared() {
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		shared = nil
	}
}

// Shared returns the package's one server, starting it on first use. A test
// that cannot have it is skipped, unless Wanted, when it fails.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	if !Wanted() {
		tb.Skip("set SANDBOXD_INTEGRATION=1 (make test does) to run tests against a real PostgreSQL")
	}
	once.Do(func() { shared, initErr = Start(context.Background()) })
	if initErr != nil {
		tb.Fatalf("pgtest: cannot start PostgreSQL (make test installs Debian's postgresql): %v", initErr)
	}
	return shared
}

// NewDatabase creates a fresh database on the shared server and returns its
// postgres:// URL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	s := Shared(tb)
	dbMu.Lock()
	dbSeq++
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq)
	dbMu.Unlock()
	if err := s.psql(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return s.URL(name)
}

// URL returns the postgres:// URL of database name on s.
func (s *Server) URL(name string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", s.Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), Path: "/" + name, RawQuery: "sslmode=disable"}
	return u.String()
}

// Start runs initdb in a new temporary directory and starts a server on a
// free loopback port. As root it runs the server as the "postgres" user
// (PostgreSQL refuses to run as root).
func Start(ctx context.Context) (*Server, error) {
	bin := binDir()
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		return nil, fmt.Errorf("no initdb in %s (scripts/pg.sh install, or apt-get install postgresql): %w", bin, err)
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		s.asUser = "postgres"
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s.Dir = dir
	if err := s.prepare(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	pw := make([]byte, 16)
	_, _ = rand.Read(pw)
	s.Password = hex.EncodeToString(pw)
	pwFile := filepath.Join(dir, "pw")
	if err := s.writeOwned(pwFile, s.Password+"\n"); err != nil {
		return s.fail(err)
	}
	if out, err := s.run(ctx, "initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"--auth=scram-sha-256", "--pwfile="+pwFile, "-E", "UTF8", "--no-locale"); err != nil {
		return s.fail(fmt.Errorf("initdb: %w: %s", err, out))
	}
	os.Remove(pwFile)
	port, err := freePort()
	if err != nil {
		return s.fail(err)
	}
	s.Port = port
	opts := fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c max_connections=200", port, dir)
	if out, err := s.run(ctx, "pg_ctl", "-D", filepath.Join(dir, "data"), "-o", opts,
		"-l", filepath.Join(dir, "log"), "-w", "-t", "120", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return s.fail(fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log))
	}
	return s, nil
}

// Stop stops the server (fast shutdown) and removes its directory.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := s.run(ctx, "pg_ctl", "-D", filepath.Join(s.Dir, "data"), "-m", "fast", "-w", "stop")
	if err != nil {
		err = fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// prepare hands the directory to the server's user.
func (s *Server) prepare() error {
	if s.asUser == "" {
		return nil
	}
	u, err := user.Lookup(s.asUser)
	if err != nil {
		return fmt.Errorf("PostgreSQL cannot run as root and there is no %q user: %w", s.asUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.uid, s.gid = uid, gid
	return os.Chown(s.Dir, uid, gid)
}

// writeOwned writes a file the server's user can read.
func (s *Server) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if s.asUser == "" {
		return nil
	}
	return os.Chown(path, s.uid, s.gid)
}

// run runs one of the server's binaries, as its user.
func (s *Server) run(ctx context.Context, name string, args ...string) (string, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = s.Dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// psql runs one SQL statement as the superuser on the maintenance
// database.
func (s *Server) psql(ctx context.Context, sql string) error { return s.Exec(ctx, "postgres", sql) }

// Exec runs one SQL statement as the superuser on database name.
func (s *Server) Exec(ctx context.Context, name, sql string) error {
	path := filepath.Join(s.bin, "psql")
	cmd := exec.CommandContext(ctx, path, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", s.URL(name), "-c", sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("psql %q: %w: %s", sql, err, out)
	}
	return nil
}

func (s *Server) fail(err error) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = s.run(ctx, "pg_ctl", "-D", filepath.Join(s.Dir, "data"), "-m", "immediate", "stop")
	os.RemoveAll(s.Dir)
	return nil, err
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
