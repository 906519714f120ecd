package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// TestLanguagesError: an environment runs only in an image that lists each
// of its languages; an image without the label is a Python image, and an
// environment configured with none runs python.
func TestLanguagesError(t *testing.T) {
	cases := []struct {
		name   string
		langs  []string
		labels map[string]string
		want   string // in the message; "" for no error
	}{
		{"python in today's image", []string{"python"}, map[string]string{"io.sandboxd.runner": "6"}, ""},
		{"none configured in today's image", nil, nil, ""},
		{"python in a labelled image", []string{"python"}, map[string]string{"io.sandboxd.languages": "python,bash"}, ""},
		{"node's in node's image", []string{"javascript", "typescript", "bash"},
			map[string]string{"io.sandboxd.languages": "javascript,typescript,bash"}, ""},
		{"javascript in today's image", []string{"javascript", "bash"}, nil,
			"image img:1 does not run javascript, bash, which its environment is configured with (environments.<name>.languages): it runs python;"},
		{"bash where it is not yet", []string{"python", "bash"}, map[string]string{"io.sandboxd.languages": "python"},
			"image img:1 does not run bash, which its environment is configured with"},
		{"python in node's image", []string{"python"}, map[string]string{"io.sandboxd.languages": "javascript,typescript,bash"},
			"does not run python, which its environment is configured with (environments.<name>.languages): it runs javascript, typescript, bash;"},
		{"an empty label runs nothing", nil, map[string]string{"io.sandboxd.languages": ""},
			"does not run python, which its environment is configured with (environments.<name>.languages): it runs nothing;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Image: "img:1", Languages: tc.langs}.languagesError("runtime.health", tc.labels)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want == "":
			case sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), tc.want):
				t.Fatalf("error %v (%s), want CodeUnavailable with %q", err, sandboxd.ErrorCode(err), tc.want)
			}
		})
	}
}

// TestHealthImageLacksLanguage (integration): Health refuses an
// environment configured with a language its image does not run, naming
// the image, the language and what it runs; the same image serves the
// languages it runs.
func TestHealthImageLacksLanguage(t *testing.T) {
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.cfg.Languages = []string{sandboxd.LanguagePython}
	if err := d.Health(ctx); err != nil {
		t.Fatalf("Health of python in %s: %v", d.cfg.Image, err)
	}
	d.cfg.Languages = []string{sandboxd.LanguagePython, sandboxd.LanguageJavaScript}
	err := d.Health(ctx)
	want := "image " + d.cfg.Image + " does not run javascript, which its environment is configured with"
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), want) ||
		!strings.Contains(sandboxd.ErrorMessage(err), "it runs python") {
		t.Errorf("Health = %v, want CodeUnavailable with %q and what the image runs", err, want)
	}
}
