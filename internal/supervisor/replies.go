package supervisor

import (
	"bytes"
	"errors"
	"strconv"
)

// maxReply bounds a reply's line: "done 255 1 ", a length and a call.
const maxReply = 64

// done is a stub's "done <status> <v> <vlen> [<call>]" and the value
// after it.
type done struct {
	status int
	// call is the session call the done names, 0 when it names none.
	call int
	// hasValue is <v>; value holds the first maxValue bytes of the vlen
	// that follow, and cut reports that more came.
	hasValue bool
	value    []byte
	cut      bool
	// pending is how many of the value's bytes are still to come.
	pending int64
}

// complete reports that the stub said "done" and sent its whole value.
func (p *proc) complete() bool { return p.done != nil && p.done.pending == 0 }

// parseReplies parses what the stub said on 4: "ready", "done" and the
// value after it, keeping of the value at most maxValue bytes. A done that
// names a call other than p.call, or p.call's once its done came, is a late
// copy and dropped: a shell whose done was cut short by an interrupt says
// it again at its next prompt, after the supervisor may have read it or sent
// the next call. It returns an error for anything else, a line longer than
// maxReply and a late copy that carries a value included.
func (p *proc) parseReplies(maxValue int64) error {
	for len(p.rbuf) > 0 {
		if d := p.done; d != nil && d.pending > 0 {
			n := min(int64(len(p.rbuf)), d.pending)
			keep := min(n, max(maxValue-int64(len(d.value)), 0))
			d.value = append(d.value, p.rbuf[:keep]...)
			d.cut = d.cut || keep < n
			d.pending -= n
			p.rbuf = p.rbuf[n:]
			continue
		}
		nl := bytes.IndexByte(p.rbuf, '\n')
		if nl < 0 {
			if len(p.rbuf) > maxReply {
				return errors.New("supervisor: a reply too long")
			}
			return nil
		}
		line := string(p.rbuf[:nl])
		p.rbuf = p.rbuf[nl+1:]
		if line == "ready" && !p.ready {
			p.ready = true
			continue
		}
		d, err := parseDone(line)
		if err == nil && p.ready && d.call != 0 && (d.call != p.call || p.done != nil) && d.pending == 0 && !d.hasValue {
			continue
		}
		if err != nil || !p.ready || p.done != nil {
			return errors.New("supervisor: a reply out of the protocol")
		}
		p.done = d
	}
	return nil
}

// parseDone parses "done <status> <v> <vlen>", and "<call>" after it when
// the done names its call (1 and up).
func parseDone(line string) (*done, error) {
	f := bytes.Fields([]byte(line))
	if len(f) < 4 || len(f) > 5 || string(f[0]) != "done" || line != string(bytes.Join(f, []byte(" "))) {
		return nil, errors.New("not a done")
	}
	status, err1 := decimal(f[1], 255)
	v, err2 := decimal(f[2], 1)
	vlen, err3 := decimal(f[3], 1<<40)
	call, err4 := int64(0), error(nil)
	if len(f) == 5 {
		if call, err4 = decimal(f[4], 1<<40); err4 == nil && call == 0 {
			err4 = errors.New("call 0")
		}
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil || (v == 0 && vlen != 0) {
		return nil, errors.New("not a done")
	}
	return &done{status: int(status), hasValue: v == 1, pending: vlen, call: int(call)}, nil
}

// decimal parses decimal digits, at most limit.
func decimal(b []byte, limit int64) (int64, error) {
	if len(b) == 0 || len(b) > 13 {
		return 0, errors.New("not a number")
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n > limit {
		return 0, errors.New("out of range")
	}
	return n, nil
}
