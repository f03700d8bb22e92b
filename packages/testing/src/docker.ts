import Docker from 'dockerode';
import { vpcNetwork } from '@pier/kit';

export const docker = new Docker();

/** The suite's own labels for containers a test starts itself (./pier test removes them by run). */
export function testLabels(): Record<string, string> {
  const run = process.env.PIER_TEST_RUN;
  return { 'pier.test': 'true', ...(run ? { 'pier.test.run': run } : {}) };
}

/** The databases' backup repository volume of this test run (labelled with the run, so removed with it). */
export const TEST_BACKUP_VOLUME = `pier-test-backups-${process.env.PIER_TEST_RUN ?? 'local'}`;

/** Every container Pier made in this VPC (they carry `pier.managed=true`), of one service or all. */
export function vpcContainers(vpcId: string, service?: string): Promise<Docker.ContainerInfo[]> {
  const label = ['pier.managed=true', `pier.vpc=${vpcId}`, ...(service ? [`pier.service=${service}`] : [])];
  return docker.listContainers({ all: true, filters: JSON.stringify({ label }) });
}

/** Removes what the adapters made for this VPC: containers, volumes, and the network. */
export async function removeVpcObjects(vpcId: string): Promise<void> {
  const filters = JSON.stringify({ label: ['pier.managed=true', `pier.vpc=${vpcId}`] });
  for (const c of await vpcContainers(vpcId))
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  const { Volumes } = await docker.listVolumes({ filters });
  for (const v of Volumes ?? [])
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  await docker
    .getNetwork(vpcNetwork(vpcId))
    .remove()
    .catch(() => undefined);
}
