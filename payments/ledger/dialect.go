package ledger

import (
	"database/sql"
	"strconv"
	"strings"
	"time"
)

// ledgerOpTimeout bounds each ledger statement: an unreachable database
// refuses a paid call in seconds rather than holding it.
const ledgerOpTimeout = 10 * time.Second

// stampLayout is the ledger's time format: UTC, fixed width, so that text
// order is time order in both backends.
const stampLayout = "2006-01-02T15:04:05.000000000Z"

// dialect is what differs between the SQL backends.
type dialect struct {
	// name is "sqlite" or "postgres".
	name string
	// dollar: placeholders are $1, $2, … rather than ?.
	dollar bool
	// sumAmount is the SQL of the sum of the amount column as a decimal.
	sumAmount string
	// dbNow is the SQL of the database's own current time in stampLayout,
	// and dbAgo the same time less ? seconds (a float). Heartbeats and the
	// lease are stamped and compared with these: one clock for every
	// replica, never each replica's own (see replica.go).
	dbNow, dbAgo string
	// dbIn is the database's time plus ? seconds (a float, maybe
	// negative), in stampLayout: when a channel's hold lapses (channels.go).
	dbIn string
	// forUpdate ends a SELECT that reads a row a transaction then writes:
	// PostgreSQL locks it; SQLite's transaction holds the one write lock.
	forUpdate string
}

// The database clocks, in stampLayout. SQLite has milliseconds (%f is
// SS.SSS), PostgreSQL microseconds; both padded to nine digits.
const (
	sqliteNow = `strftime('%Y-%m-%dT%H:%M:%f000000Z', 'now')`
	sqliteAgo = `strftime('%Y-%m-%dT%H:%M:%f000000Z', 'now', '-' || ? || ' seconds')`
	pgNow     = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"000Z"')`
	pgAgo     = `to_char((now() - make_interval(secs => ?)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"000Z"')`
	sqliteIn  = `strftime('%Y-%m-%dT%H:%M:%f000000Z', 'now', printf('%+.3f seconds', ?))`
	pgIn      = `to_char((now() + make_interval(secs => ?)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"000Z"')`
)

var (
	dialectSQLite = dialect{name: "sqlite", sumAmount: "CAST(SUM(CAST(amount AS INTEGER)) AS TEXT)",
		dbNow: sqliteNow, dbAgo: sqliteAgo, dbIn: sqliteIn}
	dialectPostgres = dialect{name: "postgres", dollar: true, sumAmount: "SUM(amount::numeric)::text",
		dbNow: pgNow, dbAgo: pgAgo, dbIn: pgIn, forUpdate: " FOR UPDATE"}
)

// bind rewrites the ? placeholders of q for the dialect. The ledger's SQL
// holds no ? inside string literals.
func (d dialect) bind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// newSQLLedger returns the ledger on db, migrated, as DefaultReplica with
// DefaultLease; Open sets the replica and lease configured.
func newSQLLedger(db *sql.DB, d dialect) *SQL {
	return &SQL{db: db, dialect: d, replica: DefaultReplica(""), lease: DefaultLease, now: time.Now, stmts: &stmts{db: db}}
}

// formatStamp is t in stampLayout.
func formatStamp(t time.Time) string { return t.UTC().Format(stampLayout) }
