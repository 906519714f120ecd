package supervisor

// startSpare starts the image's spare stub, the first language's whose
// stub is a spare in another process than warm's (nil: none), so that its
// one-shot finds it started; nil when the image has none.
func (s *Supervisor) startSpare(warm *proc) (*proc, error) {
	for _, lang := range s.Languages {
		st, ok := s.Stubs[lang]
		if ok && st.Spare && !st.Warm && (warm == nil || warm.stub.Name != st.Name) {
			return s.startStub(lang, startOpts{capAtExec: true})
		}
	}
	return nil, nil
}

// pick returns the stub that runs a one-shot of stub's process, from the
// warm stub and the spare (either may be nil), and kills, without waiting,
// the one that does not; nil when neither does (the program's stub is then
// started at the call). late is the program's ack once it has a stub: a
// spare's is the warm stub's, as it was started beside it.
func pick(warm, spare *proc, stub Stub, late bool) (p *proc, lateAfter bool) {
	p, lateAfter = warm, late
	if p != nil && p.stub.Name != stub.Name {
		p.abandon()
		p, lateAfter = nil, true
	}
	if spare == nil {
		return p, lateAfter
	}
	if p == nil && spare.stub.Name == stub.Name && spare.alive() {
		return spare, late
	}
	spare.abandon()
	return p, lateAfter
}

// alive reports that the stub has not ended, noting its end when it has.
func (p *proc) alive() bool {
	if p.end == nil {
		select {
		case e := <-p.exited:
			p.end = &e
		default:
		}
	}
	return p.end == nil
}
