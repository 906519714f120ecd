package runtime

// One cap on all a run sends: the per-stream caps count only
// output, so without it a program that reads its token could print forged
// end markers, each followed by a files section of filesBound that no cap
// counts, and move gigabytes through dockerd and the service, outside its
// container's cgroup.

// sentBound is the most a run may send on stdout and stderr together,
// every byte counted: 2 x (max x 2 streams), plus, with the protocol, the
// ack, an end marker on each stream and one files section of filesBound
// (and, in a session's call, its value of at most maxValue: a call is
// bounded as a run is, session_reader.go).
// A run that is not cut sends at most its output (max a stream), the
// runner's lines and one section, so half the 4 x max is never reached by
// it; the other half lets reading go on past one stream's cap (discarding
// its flood) while the other stream's last lines still come. Anything
// more is a flood: forged markers each followed by a section (which no
// stream's cap counts), output after a cap, markers split across reads.
func sentBound(max int, proto *protocol) int64 {
	bound := 4 * int64(max)
	if proto != nil {
		bound += int64(len(proto.ack)) + 2*int64(proto.markerLen()) + proto.filesBound() + proto.maxValue
	}
	return bound
}

// room is the most the next read may take: up to one byte past sentBound,
// so the read that crosses it is the last.
func (o *output) room() int {
	return int(o.sentMax - o.sent + 1)
}

// overSent reports whether the run has sent more than sentBound.
func (o *output) overSent() bool {
	return o.sent > o.sentMax
}
