package supervisor

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// exit is how a watched process ended, with the resources it and the
// children it reaped used.
type exit struct {
	status unix.WaitStatus
	usage  unix.Rusage
}

// reaper does PID 1's duty: it reaps every child, a stub or an orphan
// reparented to the supervisor. A stub's end goes to its watcher; an
// orphan's usage is added up, for the call during which it ended.
type reaper struct {
	mu      sync.Mutex
	watched map[int]chan<- exit
	// cpuMS and peakKB are the orphans' CPU time in all and the peak of
	// the largest since the last mark.
	cpuMS, peakKB int64
	wake          func()
	sigs          chan os.Signal
	stop          chan struct{}
	stopped       chan struct{}
}

// newReaper starts reaping; wake is called after a watched process ended.
// Stop ends it.
func newReaper(wake func()) *reaper {
	r := &reaper{
		watched: make(map[int]chan<- exit),
		wake:    wake,
		sigs:    make(chan os.Signal, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	go r.loop()
	return r
}

// loop reaps at each SIGCHLD, until Stop.
func (r *reaper) loop() {
	defer close(r.stopped)
	for {
		r.reap()
		select {
		case <-r.sigs:
		case <-r.stop:
			return
		}
	}
}

// reap collects every child that has ended.
func (r *reaper) reap() {
	for {
		var st unix.WaitStatus
		var ru unix.Rusage
		r.mu.Lock()
		pid, err := unix.Wait4(-1, &st, unix.WNOHANG, &ru)
		if err == unix.EINTR {
			r.mu.Unlock()
			continue
		}
		if err != nil || pid <= 0 {
			r.mu.Unlock()
			return
		}
		ch, ok := r.watched[pid]
		if ok {
			delete(r.watched, pid)
		} else {
			r.cpuMS += rusageMS(&ru)
			r.peakKB = max(r.peakKB, ru.Maxrss)
		}
		r.mu.Unlock()
		if ok {
			ch <- exit{status: st, usage: ru}
			r.wake()
		}
	}
}

// start runs fork (which starts a process and returns its pid) with the
// reaper held, so the process is watched before it can be reaped.
func (r *reaper) start(fork func() (int, error)) (int, <-chan exit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan exit, 1)
	r.watched[pid] = ch
	return pid, ch, nil
}

// mark returns the orphans' CPU time so far and resets their peak, at the
// start of a call.
func (r *reaper) mark() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peakKB = 0
	return r.cpuMS
}

// since returns the orphans' CPU time since mark was at cpu, and the peak
// of the largest reaped meanwhile.
func (r *reaper) since(cpu int64) (int64, int64) {
	r.reap()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cpuMS - cpu, r.peakKB
}

// Stop ends the reaping.
func (r *reaper) Stop() {
	signal.Stop(r.sigs)
	close(r.stop)
	<-r.stopped
}

// rusageMS is a rusage's user plus system time in milliseconds.
func rusageMS(ru *unix.Rusage) int64 {
	us := ru.Utime.Sec*1e6 + ru.Utime.Usec + ru.Stime.Sec*1e6 + ru.Stime.Usec
	return (us + 500) / 1000
}
