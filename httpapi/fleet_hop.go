package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"sandboxd"
)

// The hop between two replicas of a fleet. A replica that forwards a call
// to the session's own replica signs it with the fleet secret
// (server.fleet_secret_file): HMAC-SHA256 over the version, the time, the
// method, the path, a random nonce, the caller's address, the forwarding
// replica and the replica it is sent to. The owner believes a signed hop's
// caller address (its per-client caps count the caller, not the
// forwarding replica) and never forwards it again. A hop that does not
// verify, that was seen before (hopsSeen), or that is addressed to another
// replica is refused with 403, so no outsider can pose as a replica, not
// even with a hop copied off the wire between two others.

// hopHeader carries the signed hop:
// "v3;<unix seconds>;<nonce>;<client>;<from>;<to>;<hex mac>".
const hopHeader = "Sandboxd-Fleet-Hop"

// hopSkew is how far a hop's time may be from the owner's clock: the
// replicas' clocks differ a little. A hop is remembered (hopsSeen) for
// as long as it could verify, so each one is taken once.
const hopSkew = 30 * time.Second

// hopVersion begins every hop; replicas of one fleet run one version.
const hopVersion = "v3"

// hopNonceBytes is the size of a hop's nonce, in random bytes (hex).
const hopNonceBytes = 16

// hopFields are what a hop's MAC covers, beside its version.
type hopFields struct {
	unix                int64
	method, path, nonce string
	client, from, to    string
}

// mac is the hop's MAC over its version and fields under secret, joined
// by newlines in a fixed order.
func (h hopFields) mac(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s\n%d\n%s\n%s\n%s\n%s\n%s\n%s", hopVersion, h.unix, h.method, h.path, h.nonce, h.client, h.from, h.to)
	return hex.EncodeToString(m.Sum(nil))
}

// signHop is the hop header of a request forwarded by replica from to
// replica to for the caller at client, with a nonce of its own.
func signHop(secret []byte, now time.Time, method, path string, client netip.Addr, from, to string) string {
	var n [hopNonceBytes]byte
	_, _ = rand.Read(n[:])
	h := hopFields{unix: now.Unix(), method: method, path: path, nonce: hex.EncodeToString(n[:]),
		client: client.String(), from: from, to: to}
	return strings.Join([]string{hopVersion, strconv.FormatInt(h.unix, 10), h.nonce, h.client, h.from, h.to,
		h.mac(secret)}, ";")
}

// verifiedHop is what a hop header that verifies vouches for.
type verifiedHop struct {
	// client is the caller's address.
	client netip.Addr
	// mac names the hop, for hopsSeen.
	mac string
	// at is the hop's time.
	at time.Time
}

// verifyHop checks a hop header of r against secret at now, on replica
// self: a hop addressed to another replica is refused, whatever else it
// says (it was copied off the wire on its way there).
func verifyHop(secret []byte, self string, now time.Time, value string, r *http.Request) (verifiedHop, error) {
	const op = "httpapi.hop"
	refuse := func(why string) (verifiedHop, error) {
		return verifiedHop{}, hopRefused(op, why)
	}
	if len(secret) == 0 {
		return refuse("this replica takes no forwarded calls (server.fleet_secret_file is not set)")
	}
	parts := strings.Split(value, ";")
	if len(parts) != 7 || parts[0] != hopVersion {
		return refuse("it is not " + hopVersion + ";<time>;<nonce>;<client>;<from>;<to>;<mac> " +
			"(every replica of a fleet must run the same version of sandboxd)")
	}
	unix, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return refuse("its time is not a number")
	}
	if len(parts[2]) != 2*hopNonceBytes {
		return refuse("its nonce is not " + strconv.Itoa(2*hopNonceBytes) + " hex digits")
	}
	client, err := netip.ParseAddr(parts[3])
	if err != nil {
		return refuse("its client is not an address")
	}
	h := hopFields{unix: unix, method: r.Method, path: r.URL.EscapedPath(), nonce: parts[2],
		client: parts[3], from: parts[4], to: parts[5]}
	want := h.mac(secret)
	if !hmac.Equal([]byte(want), []byte(parts[6])) {
		return refuse("its signature does not match (the replicas must share one fleet secret)")
	}
	if h.to != self {
		return refuse("it is addressed to another replica of the fleet")
	}
	at := time.Unix(unix, 0)
	if d := now.Sub(at); d > hopSkew || d < -hopSkew {
		return refuse(fmt.Sprintf("its time is %s from this replica's clock, more than %s", d.Round(time.Second), hopSkew))
	}
	return verifiedHop{client: client, mac: want, at: at}, nil
}

// hopRefused is the 403 of a hop header that is not taken, for why.
func hopRefused(op, why string) error {
	return sandboxd.Errorf(sandboxd.CodeForbidden, op,
		"%s header refused: %s; this header is for the replicas of a fleet alone, leave it out", hopHeader, why)
}

// hopKey is the context key of a verified hop's caller address.
type hopKey struct{}

// hopClient returns the caller's address of a request forwarded by another
// replica, verified; ok is false for a request that came straight in.
func hopClient(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(hopKey{}).(netip.Addr)
	return a, ok
}

// fleetHops verifies the hop header of every request that carries one:
// 403 when it does not verify, else the request goes on marked forwarded
// (hopClient), never to be forwarded again.
func (s *Server) fleetHops(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		value := r.Header.Get(hopHeader)
		if value == "" {
			next.ServeHTTP(w, r)
			return
		}
		var secret []byte
		var self string
		if s.Fleet != nil {
			secret, self = s.Fleet.Secret, s.Fleet.Replica
		}
		now := time.Now()
		hop, err := verifyHop(secret, self, now, value, r)
		if err == nil {
			err = s.Fleet.seen().take(hop, now)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r.Header.Del(hopHeader)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), hopKey{}, hop.client)))
	})
}
