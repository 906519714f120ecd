package x402

import (
	"encoding/json"
	"fmt"
)

// MarshalJSON encodes name, version and the kept members, keys sorted.
func (e Extra) MarshalJSON() ([]byte, error) {
	m := map[string]json.RawMessage{}
	if e.rest != "" {
		if err := json.Unmarshal([]byte(e.rest), &m); err != nil {
			return nil, err
		}
	}
	for k, v := range map[string]string{"name": e.Name, "version": e.Version} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[k] = b
	}
	return json.Marshal(m)
}

// UnmarshalJSON takes name and version (strings) and keeps any other
// member as sent.
func (e *Extra) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*e = Extra{}
	for k, dst := range map[string]*string{"name": &e.Name, "version": &e.Version} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("extra.%s must be a string", k)
		}
		delete(m, k)
	}
	if len(m) > 0 {
		rest, err := json.Marshal(m)
		if err != nil {
			return err
		}
		e.rest = string(rest)
	}
	return nil
}

// Member returns the raw JSON of the extra member name, one other than name
// and version (a scheme's own, such as batch-settlement's
// receiverAuthorizer), and whether it is there.
func (e Extra) Member(name string) (json.RawMessage, bool) {
	if e.rest == "" {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(e.rest), &m); err != nil {
		return nil, false
	}
	v, ok := m[name]
	return v, ok
}

// WithMembers returns e with the members of m (each a JSON value, names
// other than name and version) set, replacing any of the same name: how a
// scheme adds its own members to the terms. A member that is not valid
// JSON is an error.
func (e Extra) WithMembers(m map[string]json.RawMessage) (Extra, error) {
	all := map[string]json.RawMessage{}
	if e.rest != "" {
		if err := json.Unmarshal([]byte(e.rest), &all); err != nil {
			return e, err
		}
	}
	for k, v := range m {
		if k == "name" || k == "version" {
			return e, fmt.Errorf("extra.%s is not a member to set", k)
		}
		if !json.Valid(v) {
			return e, fmt.Errorf("extra.%s is not JSON", k)
		}
		all[k] = v
	}
	rest, err := json.Marshal(all)
	if err != nil {
		return e, err
	}
	e.rest = string(rest)
	return e, nil
}
