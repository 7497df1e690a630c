/**
 * The work done on each file: parse a CSV of sensor readings
 * (`sensor,time,value`), check every row, and compute per sensor the count,
 * mean, spread and a smoothed trend (an exponential moving average over a
 * few passes: the compute part). A row that does not parse fails the file,
 * naming its line.
 */

export interface SensorSummary {
  count: number
  mean: number
  min: number
  max: number
  stddev: number
  trend: number
}

export interface FileSummary {
  rows: number
  sensors: Record<string, SensorSummary>
}

/** Smoothing passes per sensor: what makes a file cost about a millisecond. */
const PASSES = 3000

export function summarize(csv: string): FileSummary {
  const lines = csv.split('\n')
  const header = lines[0]?.trim()
  if (header !== 'sensor,time,value')
    throw new Error(`line 1: expected the header sensor,time,value, got ${header}`)
  const bySensor = new Map<string, number[]>()
  let rows = 0
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]?.trim()
    if (!line) continue
    const [sensor, time, raw] = line.split(',')
    const value = Number(raw)
    if (!sensor || !time || raw === undefined || raw === '' || !Number.isFinite(value)) {
      throw new Error(`line ${i + 1}: cannot read ${JSON.stringify(line)}`)
    }
    let values = bySensor.get(sensor)
    if (!values) {
      values = []
      bySensor.set(sensor, values)
    }
    values.push(value)
    rows++
  }
  const sensors: Record<string, SensorSummary> = {}
  for (const [sensor, values] of [...bySensor].sort(([a], [b]) => a.localeCompare(b))) {
    let sum = 0
    let min = Number.POSITIVE_INFINITY
    let max = Number.NEGATIVE_INFINITY
    for (const v of values) {
      sum += v
      if (v < min) min = v
      if (v > max) max = v
    }
    const mean = sum / values.length
    let squares = 0
    for (const v of values) squares += (v - mean) ** 2
    let trend = values[0] as number
    for (let pass = 0; pass < PASSES; pass++) {
      const alpha = 0.1 + pass / (PASSES * 10)
      for (const v of values) trend = alpha * v + (1 - alpha) * trend
    }
    sensors[sensor] = {
      count: values.length,
      mean: round(mean),
      min,
      max,
      stddev: round(Math.sqrt(squares / values.length)),
      trend: round(trend),
    }
  }
  return { rows, sensors }
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000
}

/** A file of `rows` readings of a few sensors, the same for the same `seed`. */
export function makeCsv(seed: number, rows: number): string {
  let state = seed * 2654435761 + 1
  const random = () => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
  const out = ['sensor,time,value']
  for (let i = 0; i < rows; i++) {
    const sensor = `s${Math.floor(random() * 6)}`
    out.push(`${sensor},${1_700_000_000 + i * 60},${(20 + 10 * random()).toFixed(3)}`)
  }
  return `${out.join('\n')}\n`
}
