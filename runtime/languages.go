package runtime

import (
	"slices"
	"strings"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// imageLanguages are the languages an image says it runs, in its
// runnerproto.LabelLanguages label. An image without the label runs
// python: every image built before the label existed is a Python image.
func imageLanguages(labels map[string]string) []string {
	label, ok := labels[runnerproto.LabelLanguages]
	if !ok {
		return []string{sandboxd.LanguagePython}
	}
	var langs []string
	for _, l := range strings.Split(label, ",") {
		if l = strings.TrimSpace(l); l != "" {
			langs = append(langs, l)
		}
	}
	return langs
}

// configLanguages are the languages an environment is configured with
// (Config.Languages), python when it names none.
func (c Config) configLanguages() []string {
	if len(c.Languages) == 0 {
		return []string{sandboxd.LanguagePython}
	}
	return c.Languages
}

// languagesError refuses an image that lacks a language its environment is
// configured with, naming the image, what it lacks and what it runs; nil
// when it runs every one.
func (c Config) languagesError(op string, labels map[string]string) error {
	have := imageLanguages(labels)
	var lacks []string
	for _, l := range c.configLanguages() {
		if !slices.Contains(have, l) {
			lacks = append(lacks, l)
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	runs := strings.Join(have, ", ")
	if runs == "" {
		runs = "nothing"
	}
	return sandboxd.Errorf(sandboxd.CodeUnavailable, op,
		"image %s does not run %s, which its environment is configured with (environments.<name>.languages): it runs %s; "+
			"rebuild it (`make image image-data image-node`) or configure the languages it runs",
		c.Image, strings.Join(lacks, ", "), runs)
}
