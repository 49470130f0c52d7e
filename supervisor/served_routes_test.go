package supervisor

import (
	"net/http"
	"testing"

	"github.com/gorilla/mux"
)

// servedRoutes walks the router itself: "METHOD path" of every route it
// serves, with each path template written by pathOf (the describe or the
// OpenAPI spelling). HEAD is left out: it is the GET without the body
// (buildRouter), documented as the GET.
func servedRoutes(t *testing.T, s *Server, pathOf func(tpl string) string) map[string]bool {
	t.Helper()
	served := map[string]bool{}
	err := s.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			return err
		}
		for _, m := range methods {
			if m != http.MethodHead {
				served[m+" "+pathOf(tpl)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return served
}
