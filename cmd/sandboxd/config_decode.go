package main

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"

	"sandboxd/internal/units"
)

// decodeHook reads each value of the file or the environment into its
// field's type, so that a bad one is refused naming its key and what is
// expected, where viper's own getters would silently take a zero: every
// scalar is read as its trimmed text, as the environment gives it; sizes
// and CPU counts by their UnmarshalText (internal/units); durations ("5s"),
// whole numbers and booleans here; string lists from a list of
// the file or a comma- or space-separated string of the environment. Keys
// the struct does not have are left to the decode's metadata (decodeErrors).
// mapstructure's own string hooks would not do: their errors name no
// expected form, and a file's 1.5 for a whole number would reach the
// decode as a float, which it truncates rather than refuses.
var decodeHook = mapstructure.ComposeDecodeHookFunc(asText, mapstructure.TextUnmarshallerHookFunc(), parseText)

// asText is a scalar value as its trimmed text and a list as a []string;
// sections are left alone.
func asText(from, to reflect.Value) (any, error) {
	raw := from.Interface()
	switch to.Kind() {
	case reflect.Struct, reflect.Map, reflect.Interface:
		return raw, nil
	case reflect.Slice:
		return stringList(raw)
	}
	return strings.TrimSpace(fmt.Sprint(raw)), nil
}

// durationType is the type of the duration fields, told apart from int64.
var durationType = reflect.TypeFor[time.Duration]()

// parseText parses the text asText made into the kind of the field.
func parseText(from, to reflect.Value) (any, error) {
	s, ok := from.Interface().(string)
	if !ok {
		return from.Interface(), nil
	}
	bad := func(want string) error { return &units.SyntaxError{Value: s, Want: want} }
	switch t := to.Type(); {
	case t == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, bad("a duration such as 5s or 250ms")
		}
		return d, nil
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, bad("true or false")
		}
		return b, nil
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return nil, bad("a whole number")
		}
		return reflect.ValueOf(n).Convert(t).Interface(), nil
	}
	return s, nil
}

// stringList converts a list of the file, or a comma- or space-separated
// string of the environment, to a []string.
func stringList(raw any) ([]string, error) {
	bad := &units.SyntaxError{Value: fmt.Sprint(raw), Want: `a list of strings, such as ["*"] (in the environment: comma-separated)`}
	switch v := raw.(type) {
	case string:
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, bad
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, bad
}

// decodeErrors turns what the decode returned into the service's messages:
// the unknown keys of the file at path (unused, the decode's metadata), if
// any, else one line per bad value naming its key ("config: runtime.timeout:
// fast is not ..."). mapstructure records no unknown key of a section with
// a bad value, nor of the sections around it: there the bad value is told
// first, the unknown key once it is fixed.
func decodeErrors(path string, err error, unused []string) error {
	if len(unused) > 0 {
		for i, k := range unused {
			unused[i] = mapKeyDots.Replace(k)
		}
		slices.Sort(unused)
		return fmt.Errorf("config: %s sets unknown key(s) %s; see config.yaml in the repository for the known keys",
			path, strings.Join(unused, ", "))
	}
	var errs []error
	var walk func(key string, err error)
	walk = func(key string, err error) {
		switch e := err.(type) {
		case nil:
		case *mapstructure.DecodeError: // the key: "runtime", "runtime.timeout" or "environments[data]"
			walk(mapKeyDots.Replace(e.Name()), e.Unwrap())
		case interface{ Unwrap() []error }:
			for _, err := range e.Unwrap() {
				walk(key, err)
			}
		case *units.SyntaxError:
			errs = append(errs, fmt.Errorf("config: %s: %w", key, e))
		case interface{ Unwrap() error }: // "decoding failed due to..."
			walk(key, e.Unwrap())
		default:
			errs = append(errs, fmt.Errorf("config: %s: %w", key, err))
		}
	}
	walk("", err)
	return errors.Join(errs...)
}

// mapKeyDots spells a map's entry as a key: environments[data] is
// environments.data.
var mapKeyDots = strings.NewReplacer("[", ".", "]", "")
