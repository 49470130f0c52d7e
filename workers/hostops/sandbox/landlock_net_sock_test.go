package sandbox

import (
	"net"

	"golang.org/x/sys/unix"
)

type rawSock int

func unixSocket() (rawSock, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	return rawSock(fd), err
}

func (s rawSock) connect(a *net.TCPAddr) error {
	var sa unix.SockaddrInet4
	copy(sa.Addr[:], a.IP.To4())
	sa.Port = a.Port
	return unix.Connect(int(s), &sa)
}

func (s rawSock) Close() error { return unix.Close(int(s)) }
