package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/dwpt"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/shard"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/querydsl"
)

// notHereReason is the reason callers match to refresh their routing.
const notHereReason = "shard not open here"

// code classifies an error for the wire.
func code(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, shard.ErrNotHere), errors.Is(err, engine.ErrClosed), errors.Is(err, shard.ErrReaderGone):
		return codes.NotFound
	case errors.Is(err, shard.ErrTooManyReaders):
		return codes.ResourceExhausted
	case errors.Is(err, shard.ErrConflict):
		return codes.AlreadyExists
	case errors.Is(err, querydsl.ErrInvalid), errors.Is(err, search.ErrInvalidQuery),
		errors.Is(err, mapping.ErrDocument), errors.Is(err, mapping.ErrStrict), errors.Is(err, mapping.ErrConflict),
		errors.Is(err, mapping.ErrInvalidMapping), errors.Is(err, dwpt.ErrInvalidDocument), errors.Is(err, shard.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}

// toStatus turns an error into a gRPC status error.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	c := code(err)
	if c == codes.NotFound && (errors.Is(err, shard.ErrNotHere) || errors.Is(err, engine.ErrClosed)) {
		return status.Error(c, notHereReason+": "+err.Error())
	}
	return status.Error(c, err.Error())
}

// detail is an item's ErrorDetail, naming the field when the error does.
func detail(err error) *sluicev1.ErrorDetail {
	d := &sluicev1.ErrorDetail{Code: int32(code(err)), Reason: err.Error()}
	var fe *mapping.FieldError
	var qe *querydsl.Error
	switch {
	case errors.As(err, &fe):
		d.Field = fe.Field
	case errors.As(err, &qe):
		d.Field = qe.Field
	}
	return d
}
