package runnerproto

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestVersionIsSaidOnce keeps the protocol's version in one place: every
// file that names it (the images' recipes, which label the images with it;
// Python's runner; ARCHITECTURE.md) must name Version, so a bump that
// misses one fails here rather than at a runner refusing its image.
func TestVersionIsSaidOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	recipes, err := filepath.Glob(filepath.Join(root, "images", "*", "recipe.sh"))
	if err != nil || len(recipes) == 0 {
		t.Fatalf("no image recipes found under images/: %v", err)
	}
	mentions := map[string]*regexp.Regexp{
		filepath.Join(root, "ARCHITECTURE.md"):         regexp.MustCompile(`protocol \(version (\d+)`),
		filepath.Join(root, "images/python/run.py"):    regexp.MustCompile(`protocol, version (\d+)`),
		filepath.Join(root, "docs/design/runtimes.md"): regexp.MustCompile(`### \d+\.\d+ Host protocol (\d+)`),
	}
	for _, r := range recipes {
		mentions[r] = regexp.MustCompile(`(?m)^RUNNER_PROTOCOL=(\d+)$`)
	}
	for path, re := range mentions {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		found := re.FindAllSubmatch(raw, -1)
		if len(found) == 0 {
			t.Errorf("%s names no protocol version (%s): update the pattern with the file", path, re)
		}
		for _, m := range found {
			if string(m[1]) != Version {
				t.Errorf("%s says protocol %s; runnerproto.Version is %s", path, m[1], Version)
			}
		}
	}
}
