// Package metalclient builds the metal-api client the extension's metal
// machine provider and the agent's metal source share: metal-go's generated
// client, signed with metal-stack's HMAC scheme (package security, as
// metal-go's own HMACAuth option and the firewall-controller-manager do it),
// and turns the metal-api's answers into plain errors.
package metalclient

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/go-openapi/runtime"
	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	"github.com/metal-stack/metal-go/api/client"
	"github.com/metal-stack/security"
)

// Auth types of the metal-api's HMAC users; each has its own key.
const (
	AuthTypeView  = "Metal-View"
	AuthTypeEdit  = "Metal-Edit"
	AuthTypeAdmin = "Metal-Admin"
)

// AuthTypes are the HMAC auth types the metal-api knows.
var AuthTypes = []string{AuthTypeView, AuthTypeEdit, AuthTypeAdmin}

// MaxKeyBytes bounds an HMAC key (file).
const MaxKeyBytes = 4096

// MaxURLLength bounds the metal-api URL.
const MaxURLLength = 2048

// Options say how to reach the metal-api.
type Options struct {
	// URL is the metal-api's base URL, e.g. https://metal.example.com/metal.
	URL string
	// AuthType is the HMAC auth type (one of AuthTypes).
	AuthType string
	// Key returns the HMAC key; it is asked for each request, so that a
	// rotated key file is used without a restart.
	Key func() ([]byte, error)
	// Transport, if set, carries the requests (tests); http.DefaultTransport
	// otherwise.
	Transport http.RoundTripper
}

// New returns the metal-api client. Nothing is sent yet.
func New(o Options) (*client.MetalAPI, error) {
	u, err := ParseURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Key == nil {
		return nil, errors.New("metal-api: no HMAC key")
	}
	rt := httptransport.New(u.Host, u.Path, []string{u.Scheme})
	if o.Transport != nil {
		rt.Transport = o.Transport
	}
	authType := o.AuthType
	rt.DefaultAuthentication = runtime.ClientAuthInfoWriterFunc(func(req runtime.ClientRequest, _ strfmt.Registry) error {
		key, err := o.Key()
		if err != nil {
			return err
		}
		auth := security.NewHMACAuth(authType, key)
		auth.AddAuthToClientRequest(req, time.Now())
		return nil
	})
	return client.New(rt, strfmt.Default), nil
}

// ParseURL checks the metal-api URL: absolute http(s), bounded, no user
// info (credentials do not belong into a URL that is logged).
func ParseURL(s string) (*url.URL, error) {
	if len(s) > MaxURLLength {
		return nil, fmt.Errorf("metal-api URL: longer than %d characters", MaxURLLength)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("metal-api URL %q: %w", s, err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, fmt.Errorf("metal-api URL %q: must be an absolute http or https URL", s)
	case u.User != nil:
		return nil, errors.New("metal-api URL: must not carry user information")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("metal-api URL %q: must not have a query or fragment", s)
	}
	return u, nil
}

// KeyFile returns a Key that reads path on every call: at most MaxKeyBytes,
// surrounding blanks and newlines trimmed, never empty.
func KeyFile(path string) func() ([]byte, error) {
	return func() ([]byte, error) {
		f, err := os.Open(path) //nolint:gosec // the operator's key file
		if err != nil {
			return nil, fmt.Errorf("metal-api HMAC key: %w", err)
		}
		defer func() { _ = f.Close() }()
		data, err := io.ReadAll(io.LimitReader(f, MaxKeyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("metal-api HMAC key %s: %w", path, err)
		}
		return checkKey(data, path)
	}
}

// StaticKey returns a Key that always gives key.
func StaticKey(key string) func() ([]byte, error) {
	data := []byte(key)
	return func() ([]byte, error) { return checkKey(data, "inline") }
}

func checkKey(data []byte, from string) ([]byte, error) {
	if len(data) > MaxKeyBytes {
		return nil, fmt.Errorf("metal-api HMAC key (%s): longer than %d bytes", from, MaxKeyBytes)
	}
	key := bytes.TrimSpace(data)
	if len(key) == 0 {
		return nil, fmt.Errorf("metal-api HMAC key (%s) is empty", from)
	}
	return key, nil
}
