package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// idStore is a Store that records which ID methods were called; only
// Extend and Release are used by these tests.
type idStore struct {
	lease.Store
	extends, releases []string
}

func (s *idStore) Extend(_ context.Context, id string, _ time.Duration) (time.Time, error) {
	s.extends = append(s.extends, id)
	return time.UnixMilli(1), nil
}

func (s *idStore) Release(_ context.Context, id string) error {
	s.releases = append(s.releases, id)
	return nil
}

// keyedStore adds the keyed methods, recording the leases they get.
type keyedStore struct {
	idStore
	keyed []*lease.Lease
}

func (s *keyedStore) ExtendLease(_ context.Context, l *lease.Lease, _ time.Duration) (time.Time, error) {
	s.keyed = append(s.keyed, l)
	return time.UnixMilli(2), nil
}

func (s *keyedStore) ReleaseLease(_ context.Context, l *lease.Lease) error {
	s.keyed = append(s.keyed, l)
	return nil
}

func TestExtendRelease_KeyedStore_UsesKeyedMethods(t *testing.T) {
	s := &keyedStore{}
	l := lease.Attach(s, &lease.Lease{Key: "k", ID: "id"})
	exp, err := l.Extend(t.Context(), time.Second)
	require.NoError(t, err)
	assert.Equal(t, time.UnixMilli(2), exp)
	require.NoError(t, l.Release(t.Context()))
	_, err = lease.Extend(t.Context(), s, l, time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.Release(t.Context(), s, l))
	assert.Equal(t, []*lease.Lease{l, l, l, l}, s.keyed, "every call took the keyed path with the lease itself")
	assert.Empty(t, s.extends)
	assert.Empty(t, s.releases)
}

func TestExtendRelease_PlainStore_FallsBackToID(t *testing.T) {
	s := &idStore{}
	l := lease.Attach(s, &lease.Lease{Key: "k", ID: "id"})
	exp, err := l.Extend(t.Context(), time.Second)
	require.NoError(t, err)
	assert.Equal(t, time.UnixMilli(1), exp)
	require.NoError(t, l.Release(t.Context()))
	other := &idStore{}
	_, err = lease.Extend(t.Context(), other, l, time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.Release(t.Context(), other, l))
	assert.Equal(t, []string{"id"}, s.extends)
	assert.Equal(t, []string{"id"}, s.releases)
	assert.Equal(t, []string{"id"}, other.extends, "lease.Extend uses the store it is given, not the attached one")
	assert.Equal(t, []string{"id"}, other.releases)
}

func TestExtendRelease_NilArguments_Invalid(t *testing.T) {
	ctx := t.Context()
	l := &lease.Lease{ID: "id"}
	_, err := lease.Extend(ctx, nil, l, time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	_, err = lease.Extend(ctx, &idStore{}, nil, time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	require.ErrorIs(t, lease.Release(ctx, nil, l), lease.ErrInvalidArgument)
	require.ErrorIs(t, lease.Release(ctx, &idStore{}, nil), lease.ErrInvalidArgument)
	_, err = l.Extend(ctx, time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "unattached lease")
}
