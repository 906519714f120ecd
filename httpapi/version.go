package httpapi

import (
	"net/http"
	"time"
)

// versionResponse is the answer of GET /v1/version.
type versionResponse struct {
	VersionInfo
	Docker     string `json:"docker,omitempty"`
	DockerAPI  string `json:"docker_api,omitempty"`
	Image      string `json:"image,omitempty"`
	OCIRuntime string `json:"oci_runtime,omitempty"`
	// DockerError says why the engine's part is missing, when it is.
	DockerError string `json:"docker_error,omitempty"`
	// Building are the environments whose images are being built, as
	// /v1/health names them.
	Building map[string]buildingJSON `json:"building,omitempty"`
	// Sessions says whether sessions are on, and their bounds.
	Sessions sessionsVersion `json:"sessions"`
}

// sessionsVersion describes the sessions in GET /v1/version.
type sessionsVersion struct {
	Enabled      bool  `json:"enabled"`
	Max          int   `json:"max,omitempty"`
	IdleTimeoutS int64 `json:"idle_timeout_s,omitempty"`
	MaxLifetimeS int64 `json:"max_lifetime_s,omitempty"`
}

// handleVersion reports the service's build and the engine behind it. The
// service's own version is answered even when Docker is down. The engine's
// part is reused for engineTTL (see shared).
func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	resp := versionResponse{VersionInfo: s.Version}
	if set := s.SessionSettings; s.Sessions != nil {
		resp.Sessions = sessionsVersion{Enabled: true, Max: set.Max, IdleTimeoutS: int64(set.IdleTimeout / time.Second),
			MaxLifetimeS: int64(set.MaxLifetime / time.Second)}
	}
	info, err := s.runnerInfo(r.Context())
	if err != nil {
		resp.DockerError = "the container engine did not answer"
		s.Log.Warn("version: engine info", "err", err)
	}
	resp.Docker, resp.DockerAPI, resp.Image, resp.OCIRuntime = info.Engine, info.EngineAPI, info.Image, info.OCIRuntime
	resp.Building = buildingByEnvironment(info.Building, time.Now())
	writeJSON(w, http.StatusOK, resp)
}

// VersionInfo describes the build of the service.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go"`
}
