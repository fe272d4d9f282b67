/**
 * Small line icons for trigger and action types (24×24 viewBox, stroked), one per registered
 * plug-in: a test checks every trigger and action in the registries has one. A type without one
 * still shows as a round badge with its initial, never as clipped text.
 */
export const PLUGIN_ICON_PATHS: Record<string, string[]> = {
  "trigger:webhook": ["M13 2 4 14h7l-1 8 9-12h-7l1-8z"],
  "trigger:schedule": ["M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z", "M12 7v5l3 2"],
  "trigger:rss": ["M5 18.5a.5.5 0 1 0 1 0 .5.5 0 0 0-1 0", "M4 11a9 9 0 0 1 9 9", "M4 4a16 16 0 0 1 16 16"],
  "trigger:email": ["M4 5h16a1 1 0 0 1 1 1v12a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V6a1 1 0 0 1 1-1z", "m3 7 9 6 9-6"],
  "trigger:poll": ["M20 12a8 8 0 1 1-2.34-5.66", "M20 4v5h-5"],
  "action:http": ["M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z", "M3 12h18", "M12 3c3 3 3 15 0 18", "M12 3c-3 3-3 15 0 18"],
  "action:slack": ["M10 3 8 21", "M16 3l-2 18", "M4 8h17", "M3 16h17"],
  "action:discord": ["M4 5h16v11H10l-5 4v-4H4z", "M9 10.5h.01", "M15 10.5h.01"],
  "action:sheets": ["M5 3h14v18H5z", "M5 9h14", "M5 15h14", "M11 3v18"],
  "action:note": ["M6 3h9l4 4v14H6z", "M14 3v5h5", "M9 13h6", "M9 17h6"],
  "action:push": ["M6 16v-5a6 6 0 1 1 12 0v5l2 2H4z", "M10 20a2 2 0 0 0 4 0"],
  "action:email": ["m3 11 18-8-8 18-2-8z", "m11 13 10-10"],
  "trigger:imap": ["M5 5h14l2 8v6H3v-6z", "M3 13h5l1 3h6l1-3h5"],
  "trigger:mqtt": ["M12 12h.01", "M8.5 8.5a5 5 0 0 0 0 7", "M15.5 8.5a5 5 0 0 1 0 7", "M5.6 5.6a9 9 0 0 0 0 12.8", "M18.4 5.6a9 9 0 0 1 0 12.8"],
  "action:mqtt": ["M12 10h.01", "M8.5 6.5a5 5 0 0 0 0 7", "M15.5 6.5a5 5 0 0 1 0 7", "M12 12v9", "M9 21h6"],
  "action:homeassistant": ["M3 11 12 3l9 8", "M5 9.5V20h14V9.5", "M10 20v-5h4v5"],
  "action:matrix": ["M7 4H4v16h3", "M17 4h3v16h-3", "M9 15v-5", "M9 11.5a1.5 1.5 0 0 1 3 0V15", "M12 11.5a1.5 1.5 0 0 1 3 0V15"],
  "action:gotify": ["M4 4h16v12H8l-4 4z", "M12 7v4", "M12 13.5h.01"],
  // Telegram's paper plane, its fold, and the tail to the lower wing.
  "action:telegram": ["M21.5 3.5 2.5 11l6.5 2.4L11.5 20l3.2-4.2 4.8 3.7z", "M9 13.4 21.5 3.5", "M11.5 20l.5-5.5"],
};
