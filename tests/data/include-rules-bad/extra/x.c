/* planted: a folder with no rule */
