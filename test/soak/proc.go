package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// procFigures are a process's memory and threads, from /proc. The service
// has no goroutine endpoint; its OS threads are the proxy.
type procFigures struct {
	rssKiB, hwmKiB int64
	threads        int64
	ok             bool
}

// snapshot is the service's and dockerd's figures at one moment.
type snapshot struct {
	at      time.Time
	service procFigures
	dockerd procFigures
	// dockerdPID is 0 when no dockerd is visible (another PID namespace).
	dockerdPID int
}

// sample takes the figures of the service and of dockerd.
func sample(servicePID int) snapshot {
	s := snapshot{at: time.Now(), service: readProc(servicePID)}
	if pid := findProcess("dockerd"); pid > 0 {
		s.dockerdPID = pid
		s.dockerd = readProc(pid)
	}
	return s
}

// readProc reads VmRSS, VmHWM and Threads from /proc/PID/status.
func readProc(pid int) procFigures {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procFigures{}
	}
	defer f.Close()
	var p procFigures
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			p.rssKiB, p.ok = n, true
		case "VmHWM":
			p.hwmKiB = n
		case "Threads":
			p.threads = n
		}
	}
	return p
}

// findProcess returns the PID of the first process whose command name is
// comm, or 0. It only reads /proc.
func findProcess(comm string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return pid
		}
	}
	return 0
}
