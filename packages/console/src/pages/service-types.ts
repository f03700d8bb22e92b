// The types the service detail's sections share, named from the SDK's paths.
import type { paths } from '../api.ts';

export const SERVICE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}' as const;

export type Service = paths[typeof SERVICE]['get']['responses'][200]['content']['application/json'];
export type ServicePath = { workspaceID: string; vpcID: string; serviceID: string };

/** What every section of the detail page is given. */
export interface SectionProps {
  service: Service;
  path: ServicePath;
}

/** Statuses a service passes through on its way to a final one. */
export const TRANSITIONAL = new Set<Service['status']>(['creating', 'deploying', 'restarting', 'restoring', 'deleting']);
