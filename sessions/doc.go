// Package sessions is the table of live sessions: it implements
// sandboxd.Sessions on a sandboxd.SessionEngine (the runtime). It holds
// each session's container, its owner, its lifetimes and its one call at a
// time, and it bounds the sessions that exist at once by a count, a memory
// budget and a cap per wallet of their own, apart from the slots of
// one-shot runs. Ids are capabilities: the table keeps only their SHA-256,
// and logs only their first characters. Everything is in memory: a restart
// loses every session, and the runtime's reaper removes their containers.
package sessions
