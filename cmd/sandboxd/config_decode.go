package main

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// badValue is a value of the file or the environment that does not parse
// as its key's type.
type badValue struct {
	key  string // within its section
	val  string
	want string
}

// Error names the key, the value and what it should be.
func (e *badValue) Error() string { return fmt.Sprintf("%s: %s is not %s", e.key, e.val, e.want) }

// maxQuoted is how much of a bad value an error quotes: an environment
// variable may be 128 KiB long, and the error goes to the log.
const maxQuoted = 64

// quoteShort is s as an error quotes it: its first maxQuoted bytes, with
// its length when it is longer.
func quoteShort(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:maxQuoted], ""), len(s))
}

// durationType is the type of the duration fields, told apart from int64.
var durationType = reflect.TypeFor[time.Duration]()

// decodeHook converts the values of one section (a map decoded into a
// struct) to the types of the struct's fields before mapstructure sets
// them, so that every bad value is refused with its key and what is
// expected, as viper's own getters would silently take a zero: durations
// ("5s"), sizes (unit:"bytes": 65536, 512KiB, 128MiB, 16m), CPU counts
// (unit:"cpus": 0.5, kept in billionths), whole numbers, numbers and
// booleans. Keys the struct does not have are left for UnmarshalExact to
// refuse.
func decodeHook(from, to reflect.Value) (any, error) {
	if !from.IsValid() {
		return nil, nil
	}
	in, ok := from.Interface().(map[string]any)
	if !ok || to.Kind() != reflect.Struct {
		return from.Interface(), nil
	}
	out := make(map[string]any, len(in))
	for k, raw := range in {
		out[k] = raw
	}
	var errs []error
	for _, f := range leafFields(to.Type()) {
		key := tagName(f)
		raw, ok := in[key]
		if !ok {
			continue
		}
		val, err := convert(key, raw, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[key] = val
	}
	return out, errors.Join(errs...)
}

// convert parses raw, as written in the file or the environment, into the
// type of field f (named key).
func convert(key string, raw any, f reflect.StructField) (any, error) {
	s := strings.TrimSpace(fmt.Sprint(raw))
	bad := func(want string) error { return &badValue{key: key, val: quoteShort(s), want: want} }
	t := f.Type
	switch {
	case t == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, bad("a duration such as 5s or 250ms")
		}
		return d, nil
	case f.Tag.Get("unit") == "bytes":
		n, err := parseBytes(s)
		if err != nil {
			return nil, bad("a size such as 65536, 512KiB, 128MiB or 1GiB")
		}
		return reflect.ValueOf(n).Convert(t).Interface(), nil
	case f.Tag.Get("unit") == "cpus":
		c, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, bad("a number such as 1.0")
		}
		return nanoCPUs(c), nil
	}
	switch t.Kind() {
	case reflect.String:
		return s, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, bad("true or false")
		}
		return b, nil
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return nil, bad("a whole number")
		}
		return reflect.ValueOf(n).Convert(t).Interface(), nil
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, bad("a number such as 1.0")
		}
		return x, nil
	case reflect.Slice:
		return stringList(raw, bad)
	}
	return raw, nil
}

// stringList converts a list of the file, or a comma- or space-separated
// string of the environment, to a []string.
func stringList(raw any, bad func(string) error) ([]string, error) {
	const want = `a list of strings, such as ["*"] (in the environment: comma-separated)`
	switch v := raw.(type) {
	case string:
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }), nil
	case []string:
		return v, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, bad(want)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, bad(want)
}

// nanoCPUs converts a number of CPUs to billionths of a CPU; a value no
// int64 holds becomes one runtime.Config.Validate refuses.
func nanoCPUs(c float64) int64 {
	switch {
	case math.IsNaN(c) || c < 0:
		return -1
	case c > 1e9:
		return math.MaxInt64
	}
	return int64(c * 1e9)
}

// leafFields are the fields of a section that hold one key each, those of
// squashed embedded structs included; nested sections and fields tagged
// "-" are left out.
func leafFields(t reflect.Type) []reflect.StructField {
	var fs []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case strings.Contains(f.Tag.Get("mapstructure"), ",squash"):
			fs = append(fs, leafFields(f.Type)...)
		case !f.IsExported() || tagName(f) == "-" || f.Type.Kind() == reflect.Struct:
		default:
			fs = append(fs, f)
		}
	}
	return fs
}

// tagName is the key a field decodes from.
func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
	return name
}

// configKeys lists every key, "section.key", from Config's tags.
func configKeys() []string {
	var keys []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		section := t.Field(i)
		for _, f := range leafFields(section.Type) {
			keys = append(keys, tagName(section)+"."+tagName(f))
		}
	}
	return keys
}

// decodeErrors turns what UnmarshalExact returned into the service's
// messages: the unknown keys of the file at path, if any, else one line per
// bad value naming its key and what is expected.
func decodeErrors(path string, err error) error {
	var unknown []string
	var errs []error
	var walk func(section string, err error)
	walk = func(section string, err error) {
		switch e := err.(type) {
		case *mapstructure.DecodeError:
			walk(e.Name(), e.Unwrap())
		case interface{ Unwrap() []error }:
			for _, err := range e.Unwrap() {
				walk(section, err)
			}
		case *badValue:
			errs = append(errs, fmt.Errorf("config: %s: %s is not %s", qualify(section, e.key), e.val, e.want))
		case interface{ Unwrap() error }: // "decoding failed due to..."
			walk(section, e.Unwrap())
		default:
			if keys, ok := strings.CutPrefix(err.Error(), "has invalid keys: "); ok {
				for _, k := range strings.Split(keys, ", ") {
					unknown = append(unknown, qualify(section, k))
				}
				return
			}
			errs = append(errs, fmt.Errorf("config: %s: %w", section, err))
		}
	}
	walk("", err)
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("config: %s sets unknown key(s) %s; see config.yaml in the repository for the known keys",
			path, strings.Join(unknown, ", "))
	}
	return errors.Join(errs...)
}

// qualify prefixes key with its section, if any.
func qualify(section, key string) string {
	if section == "" {
		return key
	}
	return section + "." + key
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

// parseBytes parses a size: a whole number of bytes, or one with a unit
// (KiB, MiB, GiB are powers of 1024; KB, MB, GB powers of 1000; k, m, g as
// in Docker).
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
