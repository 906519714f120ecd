package servicetest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestDropProxy: the picked request reaches the service, whose whole answer the proxy
// records and never sends (the client's request fails); the others pass unchanged.
func TestDropProxy(t *testing.T) {
	var served atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Answer", fmt.Sprint(n))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "answer %d to %s %s", n, r.URL.Path, body)
	}))
	defer upstream.Close()
	p := StartDropProxy(t, upstream.URL, DropFirst(func(r ProxyRequest) bool {
		return r.Method == http.MethodPost && r.Header.Get("X-Pay") != ""
	}))
	client := &http.Client{}
	post := func(pay string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/code?x=1", bytes.NewReader([]byte("{}")))
		if pay != "" {
			req.Header.Set("X-Pay", pay)
		}
		return client.Do(req)
	}

	for i, pay := range []string{"", "paid", "paid", ""} {
		res, err := post(pay)
		if i == 1 {
			if err == nil {
				res.Body.Close()
				t.Fatalf("request %d: answered %d, want the connection dropped", i+1, res.StatusCode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := fmt.Sprintf("answer %d to /v1/code {}", i+1)
		if res.StatusCode != http.StatusCreated || string(got) != want || res.Header.Get("X-Answer") != fmt.Sprint(i+1) {
			t.Fatalf("request %d: %d %q, want 201 %q", i+1, res.StatusCode, got, want)
		}
	}
	if served.Load() != 4 || p.Requests() != 4 {
		t.Fatalf("served %d, proxied %d, want 4 each", served.Load(), p.Requests())
	}
	drops := p.Drops()
	if len(drops) != 1 {
		t.Fatalf("dropped %d answers, want 1", len(drops))
	}
	d := drops[0]
	if d.Request.N != 2 || d.Request.Path != "/v1/code?x=1" || d.Request.Header.Get("X-Pay") != "paid" ||
		!bytes.Equal(d.Request.Body, []byte("{}")) {
		t.Errorf("dropped request %+v", d.Request)
	}
	if d.Status != http.StatusCreated || string(d.Body) != "answer 2 to /v1/code {}" || d.Header.Get("X-Answer") != "2" {
		t.Errorf("dropped answer %d %q %v", d.Status, d.Body, d.Header)
	}
}

// TestDropNth picks by number only.
func TestDropNth(t *testing.T) {
	rule := DropNth(3)
	for n := 1; n <= 4; n++ {
		if got := rule(ProxyRequest{N: n}); got != (n == 3) {
			t.Errorf("DropNth(3)(%d) = %v", n, got)
		}
	}
}

// TestDropProxyHangUp: with SetHangUp the picked request reaches the service, which sees
// its caller leave while it still works; the client gets no answer.
func TestDropProxyHangUp(t *testing.T) {
	left := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // as a service does: then the server watches the connection
		select {
		case <-r.Context().Done():
			close(left)
		case <-time.After(5 * time.Second):
			fmt.Fprint(w, "too late")
		}
	}))
	defer upstream.Close()
	p := StartDropProxy(t, upstream.URL, DropNth(1))
	p.SetHangUp(100 * time.Millisecond)
	res, err := http.Post(p.URL+"/run", "application/json", bytes.NewReader([]byte("{}")))
	if err == nil {
		res.Body.Close()
		t.Fatalf("answered %d, want the connection closed", res.StatusCode)
	}
	select {
	case <-left:
	case <-time.After(3 * time.Second):
		t.Fatal("the service did not see its caller leave")
	}
	if d := p.Drops(); len(d) != 1 || !d[0].HungUp || d[0].Request.Path != "/run" || d[0].Status != 0 {
		t.Errorf("drops %+v, want the one hung up", d)
	}
}
