// Package fleethop is the signed hop between two replicas of a fleet. A
// replica that forwards a call to the session's own replica signs it with
// the fleet secret (server.fleet_secret_file): HMAC-SHA256 over the
// version, the time, the method, the path, a random nonce, the caller's
// address, the forwarding replica and the replica it is sent to. The owner
// believes a signed hop's caller address (its per-client caps count the
// caller, not the forwarding replica) and never forwards it again. A hop
// that does not verify, that was seen before (Seen), or that is addressed
// to another replica is refused (sandboxd.CodeForbidden), so no outsider
// can pose as a replica, not even with a hop copied off the wire between
// two others.
package fleethop

import (
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

// Header carries the signed hop:
// "v3;<unix seconds>;<nonce>;<client>;<from>;<to>;<hex mac>".
const Header = "Sandboxd-Fleet-Hop"

// Skew is how far a hop's time may be from the owner's clock: the
// replicas' clocks differ a little. A hop is remembered (Seen) for as long
// as it could verify, so each one is taken once.
const Skew = 30 * time.Second

// version begins every hop; replicas of one fleet run one version.
const version = "v3"

// nonceBytes is the size of a hop's nonce, in random bytes (hex).
const nonceBytes = 16

// op names the hop's refusals.
const op = "httpapi.hop"

// fields are what a hop's MAC covers, beside its version.
type fields struct {
	unix                int64
	method, path, nonce string
	client, from, to    string
}

// mac is the hop's MAC over its version and fields under secret, joined
// by newlines in a fixed order.
func (h fields) mac(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s\n%d\n%s\n%s\n%s\n%s\n%s\n%s", version, h.unix, h.method, h.path, h.nonce, h.client, h.from, h.to)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign is the hop header of a request forwarded by replica from to
// replica to for the caller at client, with a nonce of its own.
func Sign(secret []byte, now time.Time, method, path string, client netip.Addr, from, to string) string {
	var n [nonceBytes]byte
	_, _ = rand.Read(n[:])
	h := fields{unix: now.Unix(), method: method, path: path, nonce: hex.EncodeToString(n[:]),
		client: client.String(), from: from, to: to}
	return strings.Join([]string{version, strconv.FormatInt(h.unix, 10), h.nonce, h.client, h.from, h.to,
		h.mac(secret)}, ";")
}

// Verified is what a hop header that verifies vouches for.
type Verified struct {
	// Client is the caller's address.
	Client netip.Addr
	// mac names the hop, for Seen.
	mac string
	// at is the hop's time.
	at time.Time
}

// Verify checks a hop header of r against secret at now, on replica self:
// a hop addressed to another replica is refused, whatever else it says (it
// was copied off the wire on its way there).
func Verify(secret []byte, self string, now time.Time, value string, r *http.Request) (Verified, error) {
	refuse := func(why string) (Verified, error) {
		return Verified{}, refused(why)
	}
	if len(secret) == 0 {
		return refuse("this replica takes no forwarded calls (server.fleet_secret_file is not set)")
	}
	parts := strings.Split(value, ";")
	if len(parts) != 7 || parts[0] != version {
		return refuse("it is not " + version + ";<time>;<nonce>;<client>;<from>;<to>;<mac> " +
			"(every replica of a fleet must run the same version of sandboxd)")
	}
	unix, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return refuse("its time is not a number")
	}
	if len(parts[2]) != 2*nonceBytes {
		return refuse("its nonce is not " + strconv.Itoa(2*nonceBytes) + " hex digits")
	}
	client, err := netip.ParseAddr(parts[3])
	if err != nil {
		return refuse("its client is not an address")
	}
	h := fields{unix: unix, method: r.Method, path: r.URL.EscapedPath(), nonce: parts[2],
		client: parts[3], from: parts[4], to: parts[5]}
	want := h.mac(secret)
	if !hmac.Equal([]byte(want), []byte(parts[6])) {
		return refuse("its signature does not match (the replicas must share one fleet secret)")
	}
	if h.to != self {
		return refuse("it is addressed to another replica of the fleet")
	}
	at := time.Unix(unix, 0)
	if d := now.Sub(at); d > Skew || d < -Skew {
		return refuse(fmt.Sprintf("its time is %s from this replica's clock, more than %s", d.Round(time.Second), Skew))
	}
	return Verified{Client: client, mac: want, at: at}, nil
}

// refused is the 403 of a hop header that is not taken, for why.
func refused(why string) error {
	return sandboxd.Errorf(sandboxd.CodeForbidden, op,
		"%s header refused: %s; this header is for the replicas of a fleet alone, leave it out", Header, why)
}
