// Package units holds the value types of the configuration that Go has no
// type for, sizes and CPU counts, each read from its text by UnmarshalText
// (which mapstructure honours), and the one error of a value that does not
// read as its type. It imports nothing of this module.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a size in bytes. It reads a whole number of bytes, or one with a
// unit: KiB, MiB, GiB are powers of 1024; KB, MB, GB powers of 1000; k, m, g
// (or K, M, G) as in Docker; B is one.
type Bytes int64

// UnmarshalText reads a size such as 65536, 512KiB, 128MiB, 16m.
func (b *Bytes) UnmarshalText(text []byte) error {
	n, err := parseBytes(string(text))
	if err != nil {
		return &SyntaxError{Value: string(text), Want: "a size such as 65536, 512KiB, 128MiB or 1GiB"}
	}
	*b = Bytes(n)
	return nil
}

// byteUnits are the accepted size suffixes, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// parseBytes parses a size, as Bytes reads it.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// NanoCPUs is a CPU limit in billionths of a CPU (1e9 is one CPU), as
// Docker takes it. It reads a number of CPUs such as 0.5.
type NanoCPUs int64

// UnmarshalText reads a number of CPUs. A value no int64 holds (negative,
// NaN, over a billion CPUs) becomes one out of every range a limit allows.
func (n *NanoCPUs) UnmarshalText(text []byte) error {
	c, err := strconv.ParseFloat(strings.TrimSpace(string(text)), 64)
	if err != nil {
		return &SyntaxError{Value: string(text), Want: "a number such as 1.0"}
	}
	switch {
	case math.IsNaN(c) || c < 0:
		*n = -1
	case c > 1e9:
		*n = math.MaxInt64
	default:
		*n = NanoCPUs(c * 1e9)
	}
	return nil
}

// SyntaxError is a value that does not read as its type: Value, as
// written, is not Want (such as "a duration such as 5s or 250ms").
type SyntaxError struct {
	Value string
	Want  string
}

// maxQuoted is how much of a bad value an error quotes: an environment
// variable may be 128 KiB long, and the error goes to the log.
const maxQuoted = 64

// Error quotes the value, its first maxQuoted bytes and its length when it
// is longer, and says what it should be.
func (e *SyntaxError) Error() string {
	s := strings.TrimSpace(e.Value)
	if len(s) > maxQuoted {
		s = fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:maxQuoted], ""), len(s))
	}
	return fmt.Sprintf("%s is not %s", s, e.Want)
}
