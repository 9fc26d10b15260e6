package metalapi

import (
	"fmt"
	"log/slog"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/metal-stack/metal-lib/httperrors"
	"github.com/metal-stack/metal-lib/rest"
	"github.com/metal-stack/security"
)

// Access groups of the metal-api's HMAC users. Each auth type is one user
// with its own key, as the metal-api's UserDirectory has them.
const (
	groupView  security.ResourceAccess = "metal-view"
	groupEdit  security.ResourceAccess = "metal-edit"
	groupAdmin security.ResourceAccess = "metal-admin"
)

var (
	viewAccess = []security.ResourceAccess{groupView, groupEdit, groupAdmin}
	editAccess = []security.ResourceAccess{groupEdit, groupAdmin}
)

// Auth types and the users behind them.
var users = map[string]security.User{
	"Metal-View":  {EMail: "metal-view@metal-stack.io", Name: "Metal-View", Groups: []security.ResourceAccess{groupView}},
	"Metal-Edit":  {EMail: "metal-edit@metal-stack.io", Name: "Metal-Edit", Groups: []security.ResourceAccess{groupView, groupEdit}},
	"Metal-Admin": {EMail: "metal-admin@metal-stack.io", Name: "Metal-Admin", Groups: []security.ResourceAccess{groupView, groupEdit, groupAdmin}},
}

// userAuth is the metal-api's authentication: metal-stack's security
// package checks the HMAC of each auth type that has a key (date, method and
// salt; not path or body), and metal-lib's UserAuth filter answers 403 when
// it fails. A request without HMAC is a guest, whom each route refuses.
func userAuth(keys map[string]string, log *slog.Logger) (restful.FilterFunction, error) {
	var opts []security.CredsOpt
	for authType, key := range keys {
		u, ok := users[authType]
		if !ok {
			return nil, fmt.Errorf("unknown HMAC auth type %q", authType)
		}
		opts = append(opts, security.WithHMAC(security.NewHMACAuth(authType, []byte(key), security.WithUser(u))))
	}
	return rest.UserAuth(security.NewCreds(opts...), log), nil
}

// viewer and editor guard routes as the metal-api's do.
func viewer(rf restful.RouteFunction) restful.RouteFunction { return oneOf(rf, viewAccess...) }
func editor(rf restful.RouteFunction) restful.RouteFunction { return oneOf(rf, editAccess...) }

func oneOf(rf restful.RouteFunction, acc ...security.ResourceAccess) restful.RouteFunction {
	return func(req *restful.Request, resp *restful.Response) {
		if usr := security.GetUser(req.Request); usr == nil || !usr.HasGroup(acc...) {
			sendError(resp, httperrors.Forbidden(fmt.Errorf("you are not member in one of %+v", acc)))
			return
		}
		rf(req, resp)
	}
}

// sendError answers as the metal-api does: the HTTPErrorResponse as entity,
// which go-restful's JSON writer turns into a JSON string (MarshalText).
func sendError(resp *restful.Response, e *httperrors.HTTPErrorResponse) {
	_ = resp.WriteHeaderAndEntity(e.StatusCode, e)
}

func send(resp *restful.Response, status int, v any) {
	_ = resp.WriteHeaderAndEntity(status, v)
}
