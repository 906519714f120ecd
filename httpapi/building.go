package httpapi

import (
	"context"
	"errors"
	"time"

	"sandboxd"
)

// buildingJSON is an environment's image build under way, as /v1/health
// and /v1/version answer it.
type buildingJSON struct {
	// Image is the image being built.
	Image string `json:"image"`
	// Started is when the build began.
	Started time.Time `json:"started"`
	// ReadyAt is when it is expected to be done; it may be past when the
	// build is late.
	ReadyAt time.Time `json:"ready_at"`
	// ReadyInSeconds is the time left until ReadyAt, 0 once it is past.
	ReadyInSeconds int `json:"ready_in_seconds"`
}

// The states of an environment in healthResponse.Environments.
const (
	envReady    = "ready"
	envBuilding = "building"
)

// buildingByEnvironment turns the builds under way into their answers,
// by environment; nil when there are none.
func buildingByEnvironment(builds []sandboxd.ImageBuild, now time.Time) map[string]buildingJSON {
	if len(builds) == 0 {
		return nil
	}
	out := make(map[string]buildingJSON, len(builds))
	for _, b := range builds {
		out[b.Environment] = buildingJSON{
			Image:          b.Image,
			Started:        b.Started.UTC(),
			ReadyAt:        b.ReadyAt.UTC(),
			ReadyInSeconds: max(retrySeconds(b.ReadyAt.Sub(now)), 0),
		}
	}
	return out
}

// buildingHealth is the healthy answer while the images of b are being
// built: every configured environment ready but those.
func (s *Server) buildingHealth(b *sandboxd.Building, now time.Time) healthResponse {
	resp := healthResponse{Status: "ok", Environments: map[string]string{sandboxd.DefaultEnvironment: envReady},
		Building: buildingByEnvironment(b.Images(), now)}
	for _, env := range s.Environments {
		resp.Environments[env.Name] = envReady
	}
	for name := range resp.Building {
		resp.Environments[name] = envBuilding
	}
	return resp
}

// refuseBuilding returns the refusal of a run in environment while its
// image is being built, as the last shared health answer says, else nil.
// It comes before the payment gate: a caller is not asked to pay for a run
// that cannot start (the default environment never builds while serving).
// A run never waits for a health probe while the last answer says its
// environment can run (one refreshTTL old is refreshed in the background:
// recentHealth), since a probe costs several Engine API calls (10-12 ms
// measured) and every run outside the default environment asks; an answer
// that says it is building is checked again (checkHealth: at most
// engineTTL old) before the refusal. So runs may be refused for up to
// engineTTL after the image appeared; one that starts while the image is
// missing fails as the service's own failure, unpaid.
func (s *Server) refuseBuilding(ctx context.Context, environment string) error {
	if environment == "" || environment == sandboxd.DefaultEnvironment {
		return nil
	}
	if buildRefusal(s.recentHealth(ctx), environment) == nil {
		return nil
	}
	// It was building: that ends, so ask again (a probe at most engineTTL
	// old) before refusing.
	if r := buildRefusal(s.checkHealth(ctx), environment); r != nil {
		return r
	}
	return nil
}

// buildRefusal is the refusal a health answer holds for environment's
// runs while its image is being built, or nil.
func buildRefusal(health error, environment string) *sandboxd.Error {
	var b *sandboxd.Building
	if errors.As(health, &b) {
		return b.Refusal(environment)
	}
	return nil
}
