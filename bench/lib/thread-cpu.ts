/**
 * CPU time of processes and their threads, from /proc (Linux): where a
 * benchmark's CPU went, the main thread of each process (its event loop:
 * HTTP, scheduling) apart from its other threads (worker threads, V8's
 * garbage collection helpers, libuv's pool).
 */
import { readdirSync, readFileSync } from 'node:fs'

/** Linux reports CPU time in clock ticks of 10 ms (USER_HZ = 100). */
const TICK_MS = 10

export interface ProcessCpu {
  pid: number
  /** ms of CPU of the main thread. */
  main: number
  /** ms of CPU of every other thread. */
  others: number
}

function threadMs(pid: number, tid: string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS
  } catch {
    return 0 // the thread ended meanwhile
  }
}

/** The threads of a process (none if it has ended). */
function threadsOf(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`)
  } catch {
    return []
  }
}

export function processCpu(pid: number): ProcessCpu {
  let main = 0
  let others = 0
  for (const tid of threadsOf(pid)) {
    if (Number(tid) === pid) main += threadMs(pid, tid)
    else others += threadMs(pid, tid)
  }
  return { pid, main, others }
}

/** The process `pid` and its descendants (a head and the node processes it started), each with its CPU. */
export function processTreeCpu(pid: number): ProcessCpu[] {
  const out = [processCpu(pid)]
  for (const tid of threadsOf(pid)) {
    let children = ''
    try {
      children = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
    } catch {
      continue
    }
    for (const child of children.split(' ').filter((c) => c !== ''))
      out.push(...processTreeCpu(Number(child)))
  }
  return out
}

/** CPU spent between two readings of the same tree, by process (processes started meanwhile count from 0). */
export function cpuSince(before: ProcessCpu[], after: ProcessCpu[]): ProcessCpu[] {
  return after.map((a) => {
    const b = before.find((p) => p.pid === a.pid)
    return { pid: a.pid, main: a.main - (b?.main ?? 0), others: a.others - (b?.others ?? 0) }
  })
}
