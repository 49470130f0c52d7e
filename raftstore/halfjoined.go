package raftstore

// HasConfiguration reports whether this node's raft log holds any cluster
// configuration. A newcomer stopped in the middle of its join may already
// have stored the leader's term (so HadState is true) without having received
// the configuration entry that names it; such a node is half-joined, not a
// member of a foreign cluster, and must be allowed to finish joining on its
// next start instead of being refused forever.
func (n *Node) HasConfiguration() bool {
	fut := n.raft.GetConfiguration()
	return fut.Error() == nil && len(fut.Configuration().Servers) > 0
}
