package retries

import (
	"strings"
	"testing"
	"time"
)

// TestConfigDefaults: zero fields take the defaults; Keep outlives the
// terms' validity by a minute at the least; unset Enabled means on.
func TestConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults(time.Minute)
	if c.Keep != DefaultKeep || c.Wait != DefaultWait || c.MaxAnswerBytes != DefaultMaxAnswerBytes ||
		c.MaxBytes != DefaultMaxBytes || !c.On() {
		t.Errorf("defaults = %+v (on %v)", c, c.On())
	}
	if c := (Config{}).WithDefaults(time.Hour); c.Keep != time.Hour+time.Minute {
		t.Errorf("keep for a 1h validity = %s", c.Keep)
	}
	off := false
	if (Config{Enabled: &off}).On() {
		t.Error("enabled: false is on")
	}
}

// TestConfigValidate: each bound refused, by its key.
func TestConfigValidate(t *testing.T) {
	off := false
	for _, c := range []struct {
		name string
		cfg  Config
		want string // the key refused; "" for none
	}{
		{"defaults", Config{}, ""},
		{"keep under the validity", Config{Keep: 5 * time.Minute}, "keep"},
		{"keep over a day", Config{Keep: 25 * time.Hour}, "keep"},
		{"wait under a second", Config{Wait: time.Millisecond}, "wait"},
		{"wait over a minute", Config{Wait: 2 * time.Minute}, "wait"},
		{"answers too big", Config{MaxAnswerBytes: 65 << 20}, "max_answer_bytes"},
		{"budget under one answer", Config{MaxAnswerBytes: 2 << 20, MaxBytes: 1 << 20}, "max_bytes"},
		{"off is not checked", Config{Enabled: &off, Wait: time.Hour}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var keys []string
			c.cfg.WithDefaults(5*time.Minute).Validate(5*time.Minute, func(key, format string, args ...any) {
				keys = append(keys, key)
			})
			if got := strings.Join(keys, ","); got != c.want {
				t.Errorf("refused %q, want %q", got, c.want)
			}
		})
	}
}
