package httpapi

import (
	"strings"

	"sandboxd"
)

// catalog is the configured environments with the languages each runs:
// what Catalog.Resolve combines a request's language and environment
// against.
func (s *Server) catalog() sandboxd.Catalog { return sandboxd.Catalog(s.environments()) }

// resolve is a request's language and environment, either absent (nil),
// combined by Catalog.Resolve: the one place the API decides what runs
// where (docs/api.md, "Languages and environments").
func (s *Server) resolve(language, environment *string) (lang, env string, err error) {
	return s.catalog().Resolve(deref(language), deref(environment))
}

// deref is *p, or "" for nil (a field absent or null).
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sessionLanguage checks a call's language against its session's: absent
// or blank is the session's, an unknown name is Resolve's 400 (the names
// this service runs), and a language other than the session's is a 400
// that names the session's (a session holds one live interpreter, and
// never changes it). The id is quoted cut, as the logs show it: a
// capability.
func (s *Server) sessionLanguage(info sandboxd.SessionInfo, language *string) error {
	if language == nil || strings.TrimSpace(*language) == "" {
		return nil
	}
	lang, ok := sandboxd.NormalizeLanguage(*language)
	if !ok {
		_, _, err := s.catalog().Resolve(*language, "")
		return err
	}
	if lang != info.Language {
		return sandboxd.Errorf(sandboxd.CodeInvalid, "httpapi.validate",
			`session %s… runs %s; leave "language" out, or open another session for %s`, shortSessionID(info.ID), info.Language, lang)
	}
	return nil
}
