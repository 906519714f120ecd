package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"sandboxd"
	"sandboxd/httpapi"
	"sandboxd/payments"
	"sandboxd/payments/ledger"
)

// fleetSecretBytes is the size of the fleet secret: 256 bits, written in
// the file as 64 hex digits (openssl rand -hex 32).
const fleetSecretBytes = 32

// inFleet reports whether this replica shares its sessions with a fleet:
// sessions on, on a PostgreSQL ledger (payments.ledger), which the
// registry lives in.
func (c Config) inFleet() bool {
	return c.Sessions.Enabled && ledger.IsPostgresURL(c.Payments.Ledger)
}

// fleetErrors checks server.advertise_url when set, by the rule every
// replica holds the addresses the registry names to (httpapi.ReplicaURL):
// a base URL, at an IP address among server.trusted_proxies when the fleet
// lists its replicas there. That a replica of a fleet sets it, and
// server.fleet_secret_file, is checked when it serves (fleetKeysError):
// the operator's commands on a fleet's configuration need neither.
func (c Config) fleetErrors() []error {
	if c.Server.AdvertiseURL == "" {
		return nil
	}
	proxies, err := trustedProxies(c.Server.TrustedProxies)
	if err != nil {
		return nil // clientErrors says what is wrong with them
	}
	if _, err := httpapi.ReplicaURL(c.Server.AdvertiseURL, proxies); err != nil {
		return []error{fmt.Errorf("config: server.advertise_url: %w", err)}
	}
	return nil
}

// fleetKeysError is the error of a replica of a fleet that lacks
// server.advertise_url or server.fleet_secret_file, nil otherwise.
func (c Config) fleetKeysError() error {
	var errs []error
	s := c.Server
	if s.AdvertiseURL == "" {
		errs = append(errs, fmt.Errorf("config: server.advertise_url: is empty; a replica of a fleet (payments.ledger on "+
			"PostgreSQL, sessions on) must name the address the other replicas reach it at, such as http://10.0.0.11:8080, "+
			"best its IP address, listed in server.trusted_proxies (or turn sessions off: sessions.enabled false)"))
	}
	if s.FleetSecretFile == "" {
		errs = append(errs, fmt.Errorf("config: server.fleet_secret_file: is empty; a replica of a fleet needs the file "+
			"(mode 600, the same secret of 64 hex digits on every replica: openssl rand -hex 32 > fleet.secret) its forwarded "+
			"calls are signed with"))
	}
	return errors.Join(errs...)
}

// loadFleetSecret reads the fleet secret from path: a file only its owner
// may read, holding 2*fleetSecretBytes hex digits (space around them
// allowed); the secret is the bytes they spell, so a file written in upper
// case signs as one in lower case.
func loadFleetSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server.fleet_secret_file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("server.fleet_secret_file: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("server.fleet_secret_file: %s holds the fleet secret but group or others may read it "+
			"(mode %04o): run chmod 600 %s", path, mode, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("server.fleet_secret_file: %w", err)
	}
	b = bytes.TrimSpace(b)
	secret, err := hex.DecodeString(string(b))
	if err != nil || len(secret) != fleetSecretBytes {
		return nil, fmt.Errorf("server.fleet_secret_file: %s holds %d bytes that are not %d hex digits, the fleet "+
			"secret (256 bits, the same on every replica): make it with openssl rand -hex %d > %s",
			path, len(b), 2*fleetSecretBytes, fleetSecretBytes, path)
	}
	return secret, nil
}

// forwardLimit bounds a call forwarded to the replica of a session in
// environment: that environment's timeout, and the rest of the request's
// budget around a run (the queue wait, the payment check and settlement,
// the ledger writes).
func (c Config) forwardLimit(environment string) time.Duration {
	rest := c.requestBudget() - c.longestTimeout()
	if e, ok := c.Environments[environment]; ok {
		return c.runtimeConfig(e).Timeout + rest
	}
	return c.requestBudget()
}

// fleetLedger is the ledger the registry lives in: the payment gate's
// when payments are on, else one opened for the registry alone (closed by
// the returned func).
func (m *Main) fleetLedger(ctx context.Context, gate sandboxd.PaymentGate) (*ledger.SQL, func() error, error) {
	if g, ok := gate.(*payments.Gate); ok && g.Ledger() != nil {
		return g.Ledger(), func() error { return nil }, nil
	}
	pc := m.Config.paymentsConfig()
	l, err := ledger.Open(ctx, ledger.Config{Ledger: pc.Ledger, Replica: pc.ReplicaID, Lease: pc.Lease})
	if err != nil {
		return nil, nil, fmt.Errorf("the fleet's session registry: %w", err)
	}
	return l, l.Close, nil
}

// openFleet builds what a replica of a fleet needs for sessions: the
// registry on the ledger, with this replica's earlier sessions ended (its
// containers were reaped), the loop that keeps it (startRegistryLoop), and the
// API's Fleet. It returns nil, nil outside a fleet.
func (m *Main) openFleet(ctx context.Context, gate sandboxd.PaymentGate) (*ledger.Registry, *httpapi.Fleet, error) {
	if !m.Config.inFleet() {
		return nil, nil, nil
	}
	if err := m.Config.fleetKeysError(); err != nil {
		return nil, nil, err
	}
	secret, err := loadFleetSecret(m.Config.Server.FleetSecretFile)
	if err != nil {
		return nil, nil, err
	}
	proxies, _ := trustedProxies(m.Config.Server.TrustedProxies)
	u, err := httpapi.ReplicaURL(m.Config.Server.AdvertiseURL, proxies)
	if err != nil {
		return nil, nil, fmt.Errorf("config: server.advertise_url: %w", err)
	}
	base := u.String()
	l, closeLedger, err := m.fleetLedger(ctx, gate)
	if err != nil {
		return nil, nil, err
	}
	reg := l.Registry(base)
	n, err := reg.EndOwn(ctx)
	if err != nil {
		_ = closeLedger()
		return nil, nil, fmt.Errorf("the fleet's session registry: %w", err)
	}
	log := m.Log.With("component", "fleet")
	log.Info("fleet sessions on", "replica", l.Replica(), "advertise_url", base, "ended_from_before", n)
	if len(proxies) == 0 {
		log.Warn("server.trusted_proxies lists no replica: forwards go to whatever address the registry names; " +
			"list every replica's address there to pin them")
	}
	m.fleetLoop = startRegistryLoop(ctx, l, reg, m.metrics, log)
	m.fleetClose = closeLedger
	return reg, &httpapi.Fleet{Registry: reg, Replica: l.Replica(), Secret: secret, Limit: m.Config.forwardLimit}, nil
}
