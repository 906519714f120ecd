package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// poolMemoryShare bounds the warm pool by memory: its most containers,
// each allowed runtime.memory, may claim at most 1/poolMemoryShare of the
// host's memory, leaving the rest to the runs, Docker and the system.
const poolMemoryShare = 2

// hostMemory is the host's total memory in bytes, from /proc/meminfo, or 0
// when it cannot be read (the check is then skipped). A variable, so tests
// can stand in a host of their own.
var hostMemory = func() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
