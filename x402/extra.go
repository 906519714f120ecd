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
