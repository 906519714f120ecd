package main

import (
	"bytes"
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
