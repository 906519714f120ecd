package httpapi

import (
	"fmt"
	"strings"
	"time"

	"sandboxd"
)

// environments are the configured environments, or DefaultEnvironment
// alone when none are (a server built before environments existed).
func (s *Server) environments() []sandboxd.Environment {
	if len(s.Environments) > 0 {
		return s.Environments
	}
	return []sandboxd.Environment{{Name: sandboxd.DefaultEnvironment,
		Description: "Python 3.11, standard library only.", Languages: []string{sandboxd.LanguagePython}}}
}

// environmentNames lists the names of the configured environments.
func (s *Server) environmentNames() []string {
	envs := s.environments()
	names := make([]string, len(envs))
	for i, e := range envs {
		names[i] = e.Name
	}
	return names
}

// describeEnvironments says in a sentence per environment of envs what
// each holds, the languages it runs, its limits and its price, for the
// schemas' descriptions; home is the environment of a request that names
// none, "" when that depends on its language.
func (s *Server) describeEnvironments(home string, envs []sandboxd.Environment) string {
	var b strings.Builder
	b.WriteString("The environment the program runs in")
	if home != "" {
		b.WriteString("; " + home + " when absent.")
	} else {
		b.WriteString("; when absent, the language's home (" + sandboxd.DefaultEnvironment + " without a language).")
	}
	for _, e := range envs {
		fmt.Fprintf(&b, " %s: %s", e.Name, strings.TrimSuffix(e.Description, "."))
		var limits []string
		if len(e.Languages) > 0 {
			limits = append(limits, "runs "+strings.Join(e.Languages, ", "))
		}
		if e.Timeout > 0 {
			limits = append(limits, "timeout "+e.Timeout.Round(time.Millisecond).String())
		}
		if e.MemoryBytes > 0 {
			limits = append(limits, fmt.Sprintf("memory %d MiB", e.MemoryBytes>>20))
		}
		if e.Price != "" {
			limits = append(limits, "price "+e.Price+" per call")
		}
		if len(limits) > 0 {
			b.WriteString(" (" + strings.Join(limits, ", ") + ")")
		}
		b.WriteString(".")
	}
	return b.String()
}
