package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/viper"
)

// maxConfigBytes bounds the configuration file; the repository's, with a
// comment on every key, is under 8 KB.
const maxConfigBytes = 1 << 20

// readConfigFile reads the configuration file at path into v: a regular
// file (not a device or a pipe, which could be read forever or block the
// start), at most maxConfigBytes long, in a format viper knows by its
// extension. YAML's own limits (alias expansion, nesting) then apply.
func readConfigFile(v *viper.Viper, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return err
	}
	if len(raw) > maxConfigBytes {
		return fmt.Errorf("the file is over the limit of %d bytes", maxConfigBytes)
	}
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if !slices.Contains(viper.SupportedExts, ext) {
		return fmt.Errorf("its extension %q is not one of %s", ext, strings.Join(viper.SupportedExts, ", "))
	}
	v.SetConfigType(ext)
	return v.ReadConfig(bytes.NewReader(raw))
}

// nullKeys refuses a key the file sets to null (`key: ~` or `key:`), at
// any depth, which the decode would otherwise skip, silently keeping the
// default.
func nullKeys(v *viper.Viper) error {
	var errs []error
	keys := v.AllKeys()
	slices.Sort(keys)
	for _, k := range keys {
		parent, key := "", k
		if i := strings.LastIndex(k, "."); i >= 0 {
			parent, key = k[:i], k[i+1:]
		}
		if parent == "" {
			continue
		}
		if m, isMap := v.Get(parent).(map[string]any); isMap {
			if val, set := m[key]; set && val == nil {
				errs = append(errs, fmt.Errorf("config: %s: is null; give it a value, or remove the line for the default%s", k, nullHint(k)))
			}
		}
	}
	return errors.Join(errs...)
}

// nullHint tells how to turn an environment off, for a null environment.
func nullHint(key string) string {
	if name, ok := strings.CutPrefix(key, "environments."); ok && !strings.Contains(name, ".") {
		return fmt.Sprintf(" (to turn the environment off: environments.%s.enabled: false)", name)
	}
	return ""
}
