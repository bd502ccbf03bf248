package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Credential is what the host presents for one security scheme. Set the
// fields its type needs:
//
//   - apiKey (in header, query or cookie): APIKey;
//   - http bearer, and openIdConnect with a token obtained elsewhere: Token;
//   - http basic: Username and Password;
//   - oauth2: Token, or ClientID and ClientSecret for the client
//     credentials flow (the token is fetched from the flow's tokenUrl, or
//     TokenURL, and cached until it expires). Scopes are added to those
//     the operation asks for.
type Credential struct {
	APIKey       string
	Token        string
	Username     string
	Password     string
	ClientID     string
	ClientSecret string
	Scopes       []string
	TokenURL     string
}

// String hides the secrets, so a Credential printed by mistake leaks
// nothing.
func (Credential) String() string { return "openapi.Credential{…}" }

// GoString hides the secrets from %#v.
func (c Credential) GoString() string { return c.String() }

// schemeUse is one security scheme an operation asks for, with its scopes.
type schemeUse struct {
	name   string
	scheme *v3.SecurityScheme
	scopes []string
}

// requirement is one alternative of an operation's security: every
// scheme in it applies. An empty one means no credentials are needed.
type requirement []schemeUse

// authenticator applies credentials to requests, and caches OAuth2 tokens.
type authenticator struct {
	cfg    *Config
	mu     sync.Mutex
	tokens map[string]token
}

type token struct {
	value   string
	expires time.Time
}

func newAuthenticator(cfg *Config) *authenticator {
	return &authenticator{cfg: cfg, tokens: map[string]token{}}
}

// requirements reads an operation's security (its own, else the
// document's), checking that every scheme it names is declared.
func (a *authenticator) requirements(doc *v3.Document, op *v3.Operation, ptr string) ([]requirement, error) {
	reqs, rptr := doc.Security, "/security"
	if low := op.GoLow(); low != nil && low.Security.GetValueNode() != nil {
		reqs, rptr = op.Security, child(ptr, "security")
	}
	var out []requirement
	for i, r := range reqs {
		if r == nil {
			continue
		}
		var req requirement
		for name, scopes := range r.Requirements.FromOldest() {
			var s *v3.SecurityScheme
			if doc.Components != nil && doc.Components.SecuritySchemes != nil {
				s, _ = doc.Components.SecuritySchemes.Get(name)
			}
			if s == nil {
				return nil, docErrorf(child(rptr, strconv.Itoa(i), name), "security scheme %q is not declared in components.securitySchemes", name)
			}
			req = append(req, schemeUse{name: name, scheme: s, scopes: scopes})
		}
		out = append(out, req)
	}
	return out, nil
}

// hiddenParams lists the parameters (location and lower-case name) that
// carry an API key of reqs: they are not tool parameters.
func (a *authenticator) hiddenParams(reqs []requirement) map[string]bool {
	out := map[string]bool{}
	for _, r := range reqs {
		for _, u := range r {
			if strings.EqualFold(u.scheme.Type, "apiKey") {
				out[u.scheme.In+"\x00"+strings.ToLower(u.scheme.Name)] = true
			}
		}
	}
	return out
}

// apply adds the credentials of the first alternative of reqs that
// Config.Auth can satisfy (alternatives that need none come last). With
// none satisfiable the request goes out without credentials, and the
// server decides.
func (a *authenticator) apply(ctx context.Context, req *http.Request, reqs []requirement) error {
	var pick requirement
	found := false
	for _, r := range reqs {
		if len(r) > 0 && a.satisfiable(r) {
			pick, found = r, true
			break
		}
	}
	if !found {
		return nil
	}
	q := req.URL.Query()
	touchedQuery := false
	for _, u := range pick {
		c := a.cfg.Auth[u.name]
		s := u.scheme
		switch strings.ToLower(s.Type) {
		case "apikey":
			switch s.In {
			case "header":
				req.Header.Set(s.Name, c.APIKey)
			case "query":
				q.Set(s.Name, c.APIKey)
				touchedQuery = true
			case "cookie":
				req.AddCookie(&http.Cookie{Name: s.Name, Value: c.APIKey})
			}
		case "http":
			if strings.EqualFold(s.Scheme, "basic") {
				req.SetBasicAuth(c.Username, c.Password)
			} else {
				req.Header.Set("Authorization", "Bearer "+c.Token)
			}
		case "oauth2", "openidconnect":
			tok := c.Token
			if tok == "" {
				var err error
				if tok, err = a.clientToken(ctx, u, c); err != nil {
					return err
				}
			}
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	if touchedQuery {
		req.URL.RawQuery = q.Encode()
	}
	return nil
}

// satisfiable reports whether Config.Auth has a usable credential for
// every scheme of r.
func (a *authenticator) satisfiable(r requirement) bool {
	for _, u := range r {
		c, ok := a.cfg.Auth[u.name]
		if !ok {
			return false
		}
		s := u.scheme
		var ok2 bool
		switch strings.ToLower(s.Type) {
		case "apikey":
			ok2 = c.APIKey != "" && slices.Contains([]string{"header", "query", "cookie"}, s.In)
		case "http":
			switch strings.ToLower(s.Scheme) {
			case "basic":
				ok2 = c.Username != ""
			case "bearer":
				ok2 = c.Token != ""
			}
		case "oauth2":
			hasFlow := s.Flows != nil && s.Flows.ClientCredentials != nil
			ok2 = c.Token != "" || (c.ClientID != "" && (hasFlow || c.TokenURL != ""))
		case "openidconnect":
			ok2 = c.Token != ""
		}
		if !ok2 {
			return false
		}
	}
	return true
}

// maxTokenResponse bounds a token endpoint's answer.
const maxTokenResponse = 1 << 20

// clientToken returns an OAuth2 access token from the client credentials
// flow, cached until shortly before it expires.
func (a *authenticator) clientToken(ctx context.Context, u schemeUse, c Credential) (string, error) {
	tokenURL := c.TokenURL
	if tokenURL == "" && u.scheme.Flows != nil && u.scheme.Flows.ClientCredentials != nil {
		tokenURL = u.scheme.Flows.ClientCredentials.TokenUrl
	}
	scopes := slices.Clone(u.scopes)
	for _, s := range c.Scopes {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	slices.Sort(scopes)
	key := u.name + "\x00" + strings.Join(scopes, " ")
	a.mu.Lock()
	t, ok := a.tokens[key]
	a.mu.Unlock()
	if ok && time.Now().Before(t.expires) {
		return t.value, nil
	}
	tu, err := url.Parse(tokenURL)
	if err != nil || (tu.Scheme != "http" && tu.Scheme != "https") || tu.Host == "" {
		return "", fmt.Errorf("openapi: security scheme %q: the token URL %q is not an absolute http or https URL; set Credential.TokenURL", u.name, tokenURL)
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tu.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("openapi: security scheme %q: %w", u.name, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	resp, err := a.cfg.client().Do(req)
	if err != nil {
		return "", fmt.Errorf("openapi: security scheme %q: the token request failed: %w", u.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return "", fmt.Errorf("openapi: security scheme %q: reading the token response: %w", u.name, err)
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("openapi: security scheme %q: the token endpoint answered %s: %s", u.name, resp.Status, bodySnippet(string(data)))
	}
	var tr struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if err := json.Unmarshal(data, &tr); err != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("openapi: security scheme %q: the token endpoint's answer has no access_token", u.name)
	}
	life := 10 * time.Minute
	if n, err := strconv.ParseFloat(strings.Trim(string(tr.ExpiresIn), `"`), 64); err == nil && n > 0 {
		life = time.Duration(n) * time.Second
	}
	// Renew a little early, so a token does not expire in flight.
	life -= min(30*time.Second, life/10)
	a.mu.Lock()
	a.tokens[key] = token{value: tr.AccessToken, expires: time.Now().Add(life)}
	a.mu.Unlock()
	return tr.AccessToken, nil
}
