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
		Description: "Python 3.11, standard library only."}}
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

// environment validates a request's environment, trimmed and lower-cased
// like its language: DefaultEnvironment when absent or blank, else one of
// the configured names, else a CodeInvalid error listing them.
func (s *Server) environment(name *string) (string, error) {
	env := ""
	if name != nil {
		env = strings.ToLower(strings.TrimSpace(*name))
	}
	if env == "" {
		env = sandboxd.DefaultEnvironment
	}
	for _, e := range s.environments() {
		if e.Name == env {
			return env, nil
		}
	}
	return "", sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
		"environment %q is not configured; use one of: %s", env, strings.Join(s.environmentNames(), ", "))
}

// describeEnvironments says in a sentence per environment what each holds,
// its limits and its price, for the schemas' descriptions.
func (s *Server) describeEnvironments() string {
	var b strings.Builder
	b.WriteString("The environment the program runs in; " + sandboxd.DefaultEnvironment + " when absent.")
	for _, e := range s.environments() {
		fmt.Fprintf(&b, " %s: %s", e.Name, strings.TrimSuffix(e.Description, "."))
		var limits []string
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
