package httpapi

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// TestArchitectureListsEveryRoute keeps ARCHITECTURE.md's table of routes
// and the router in step: every route the router has (the page's but its
// root counted as one row) has a row, and every row names a route the
// router has, so a reader finds any route's handler from the map alone.
func TestArchitectureListsEveryRoute(t *testing.T) {
	s := newTestServer(&fakeRunner{}, nil)
	s.Page = true
	have := map[string]bool{}
	err := s.router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		if _, page := pageRoutes[path]; page && path != "/" {
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil {
			return err
		}
		for _, m := range methods {
			if m != "HEAD" {
				have[m+" "+path] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([A-Z]+) (/[^`]*)`").FindAllStringSubmatch(string(doc), -1)
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r[1]+" "+r[2]] = true
	}
	for route := range have {
		if !listed[route] {
			t.Errorf("the router has %s, which ARCHITECTURE.md's table of routes does not list", route)
		}
	}
	for route := range listed {
		if !have[route] {
			t.Errorf("ARCHITECTURE.md lists %s, which the router does not have", route)
		}
	}
	if len(have) < 10 {
		keys := make([]string, 0, len(have))
		for k := range have {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Fatalf("the router walked only %s", strings.Join(keys, ", "))
	}
}
