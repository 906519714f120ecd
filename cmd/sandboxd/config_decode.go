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
// the struct does not have are left for UnmarshalExact to refuse.
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

// configKeys lists every key, "section.key", from Config's tags, for the
// environment to set each (LoadConfig binds them all).
func configKeys() []string {
	var keys []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		section := t.Field(i)
		if section.Type.Kind() != reflect.Struct {
			continue // environments: their keys are bound by name (bindEnvironments)
		}
		keys = append(keys, sectionKeys(tagName(section), section.Type)...)
	}
	return keys
}

// sectionKeys are the keys of a section at prefix: its leaf fields', and
// those of the sections nested in it (payments.channels.enabled).
func sectionKeys(prefix string, t reflect.Type) []string {
	var keys []string
	for _, f := range leafFields(t) {
		keys = append(keys, prefix+"."+tagName(f))
	}
	for _, f := range nestedSections(t) {
		keys = append(keys, sectionKeys(prefix+"."+tagName(f), f.Type)...)
	}
	return keys
}

// nestedSections are the struct fields of t (squashed ones looked into)
// that are sections of their own, such as payments.channels; time values
// are not sections.
func nestedSections(t reflect.Type) []reflect.StructField {
	var fs []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case strings.Contains(f.Tag.Get("mapstructure"), ",squash"):
			fs = append(fs, nestedSections(f.Type)...)
		case f.IsExported() && tagName(f) != "-" && tagName(f) != "" && f.Type.Kind() == reflect.Struct:
			fs = append(fs, f)
		}
	}
	return fs
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

// decodeErrors turns what UnmarshalExact returned into the service's
// messages: the unknown keys of the file at path, if any, else one line per
// bad value naming its key ("config: runtime.timeout: fast is not ...").
func decodeErrors(path string, err error) error {
	var unknown []string
	var errs []error
	var walk func(key string, err error)
	walk = func(key string, err error) {
		switch e := err.(type) {
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
			if keys, ok := strings.CutPrefix(err.Error(), "has invalid keys: "); ok {
				for _, k := range strings.Split(keys, ", ") {
					unknown = append(unknown, mapKeyDots.Replace(qualify(key, k)))
				}
				return
			}
			errs = append(errs, fmt.Errorf("config: %s: %w", key, err))
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

// mapKeyDots spells a map's entry as a key: environments[data] is
// environments.data.
var mapKeyDots = strings.NewReplacer("[", ".", "]", "")

// qualify prefixes key with its section, if any.
func qualify(section, key string) string {
	if section == "" {
		return key
	}
	return section + "." + key
}
