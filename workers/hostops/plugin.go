package hostops

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/svcd/svcd/shared/proto"
)

// Plugin is the go-plugin glue: in the worker Impl is the real HostOps; in
// the supervisor Impl is nil and GRPCClient hands out the client half.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl HostOps
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the server half on the worker's gRPC server.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterHostOpsServer(s, &GRPCServer{impl: p.Impl})
	return nil
}

// GRPCClient returns the client half over the supervisor's connection.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &GRPCClient{client: pb.NewHostOpsClient(c)}, nil
}
