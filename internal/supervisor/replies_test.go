package supervisor

import (
	"strings"
	"testing"
)

func TestParseReplies(t *testing.T) {
	tests := []struct {
		name, in string
		max      int64
		ok, done bool
		status   int
		value    string
		cut      bool
	}{
		{name: "ready only", in: "ready\n", ok: true},
		{name: "done", in: "ready\ndone 3 0 0\n", ok: true, done: true, status: 3},
		{name: "value", in: "ready\ndone 0 1 3\nabc", max: 10, ok: true, done: true, value: "abc"},
		{name: "value cut", in: "ready\ndone 0 1 5\nabcde", max: 2, ok: true, done: true, value: "ab", cut: true},
		{name: "value pending", in: "ready\ndone 0 1 5\nab", max: 10, ok: true, value: "ab"},
		{name: "line pending", in: "ready\ndone 0", ok: true},
		{name: "done before ready", in: "done 0 0 0\n"},
		{name: "two dones", in: "ready\ndone 0 0 0\ndone 0 0 0\n"},
		{name: "status over 255", in: "ready\ndone 256 0 0\n"},
		{name: "length without a value", in: "ready\ndone 0 0 4\n"},
		{name: "flag out of range", in: "ready\ndone 0 2 0\n"},
		{name: "signed", in: "ready\ndone -1 0 0\n"},
		{name: "spaces", in: "ready\ndone  0 0 0\n"},
		{name: "junk", in: "ready\nhello\n"},
		{name: "a line without end", in: "ready\n" + strings.Repeat("x", maxReply+1)},
		{name: "a huge length", in: "ready\ndone 0 1 99999999999999\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &proc{rbuf: []byte(tt.in)}
			err := p.parseReplies(tt.max)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok %v", err, tt.ok)
			}
			if !tt.ok {
				return
			}
			if p.complete() != tt.done {
				t.Fatalf("complete %v", p.complete())
			}
			if p.done != nil && (p.done.status != tt.status || string(p.done.value) != tt.value || p.done.cut != tt.cut) {
				t.Errorf("done %+v", p.done)
			}
		})
	}
}

func TestParseRepliesInPieces(t *testing.T) {
	// A reply split anywhere parses as a whole.
	in := "ready\ndone 7 1 4\nwxyz"
	for i := range len(in) {
		p := &proc{}
		for _, part := range []string{in[:i], in[i:]} {
			p.rbuf = append(p.rbuf, part...)
			if err := p.parseReplies(100); err != nil {
				t.Fatalf("split at %d: %v", i, err)
			}
		}
		if !p.complete() || p.done.status != 7 || string(p.done.value) != "wxyz" {
			t.Errorf("split at %d: %+v", i, p.done)
		}
	}
}

func TestParseRepliesDropsLateCopies(t *testing.T) {
	// A done that names its call is the awaited call's only once; a copy
	// of it, or of an earlier call's, is dropped, unless it carries a value.
	tests := []struct {
		name, in string
		call     int
		ok       bool
		status   int
	}{
		{name: "named", in: "ready\ndone 3 0 0 4\n", call: 4, ok: true, status: 3},
		{name: "an earlier call's first", in: "ready\ndone 130 0 0 3\ndone 0 0 0 4\n", call: 4, ok: true},
		{name: "a copy after", in: "ready\ndone 0 0 0 4\ndone 130 0 0 4\n", call: 4, ok: true},
		{name: "a later call's", in: "ready\ndone 0 0 0 4\ndone 0 0 0 5\n", call: 4, ok: true},
		{name: "a copy with a value", in: "ready\ndone 0 0 0 4\ndone 0 1 2 4\nab", call: 4},
		{name: "call 0", in: "ready\ndone 0 0 0 0\n", call: 4},
		{name: "six fields", in: "ready\ndone 0 0 0 4 4\n", call: 4},
		{name: "an unnamed copy", in: "ready\ndone 0 0 0 4\ndone 0 0 0\n", call: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &proc{rbuf: []byte(tt.in), call: tt.call}
			err := p.parseReplies(10)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok %v", err, tt.ok)
			}
			if tt.ok && (!p.complete() || p.done.status != tt.status || p.done.call != tt.call) {
				t.Errorf("done %+v", p.done)
			}
		})
	}
}
