package raftstore

// State is everything svcd keeps durably. It is owned by the FSM: read it only
// inside Node.Read and copy out what you need; change it only through commands.
type State struct {
	System  SystemState  `json:"system"`
	Browser BrowserState `json:"browser"`
	Relay   RelayState   `json:"relay"`
	Cluster ClusterState `json:"cluster"`
	// Conversations are the renewal area's records; Tasks the work the
	// daemon runs on someone's behalf.
	Conversations ConversationsState `json:"conversations"`
	Tasks         TasksState         `json:"tasks"`
	Jobs          JobsState          `json:"jobs"`
	// Pairing holds the hashes of pairing codes and bridge credentials.
	Pairing PairingState `json:"pairing"`
	// SeenMessages remembers every conversation's message ids for
	// SeenMessageRetention, so a reply reported again never runs twice.
	SeenMessages SeenMessagesState `json:"seen_messages"`
}

func newState() *State {
	s := &State{}
	s.normalize()
	return s
}

// normalize fills zero values a snapshot from an older build may lack, so that
// handlers never meet a nil map.
func (s *State) normalize() {
	if s.System.Mode == "" {
		s.System.Mode = ModeRunning
	}
	s.Browser.normalize()
	s.Relay.normalize()
	s.Cluster.normalize()
	s.Conversations.normalize()
	s.Tasks.normalize()
	s.Jobs.normalize()
	s.Pairing.normalize()
	s.SeenMessages.normalize(s.Conversations.ByID)
}
