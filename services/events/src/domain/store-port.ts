import type { Page, PageRequest } from '@pier/kit';
import type { EventFilters, NewEvent, StoredEvent } from './records.ts';

export interface EventStore {
  /** Stores a batch in one transaction, each event once (an id already stored is skipped); returns how many were new. */
  insert(events: NewEvent[]): Promise<number>;
  /** A page of the workspace's events, newest first. */
  list(workspaceId: string, filters: EventFilters, page: PageRequest): Promise<Page<StoredEvent>>;
  /** The workspace's events stored after `seq`, in storage order, at most `limit`. */
  after(workspaceId: string, filters: EventFilters, seq: number, limit: number): Promise<StoredEvent[]>;
  /** The seq of one of the workspace's events, undefined when it is not (or no longer) stored. */
  seqOf(workspaceId: string, id: string): Promise<number | undefined>;
  /** The last seq stored (0 when none): a follower without `Last-Event-ID` starts there. */
  lastSeq(): Promise<number>;
  /** Deletes events that occurred before `cutoff`, `batch` rows per statement; returns how many went. */
  trim(cutoff: Date, batch: number): Promise<number>;
}
